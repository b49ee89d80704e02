"""The upstream trainers Primus patches, declared at the bottom of the layers: ``release`` (a declaration, and
which release Python would import, read without importing it), one module per upstream with the releases its
patches support, and ``backends`` (each backend as one object, found through its entry point). It imports only
``primus.plugins``, ``packaging`` and the standard library, so every layer can read them."""
