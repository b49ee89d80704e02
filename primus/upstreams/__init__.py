"""The upstream trainers Primus patches, declared at the bottom of the layers: ``release`` (what a declaration
holds, and which release of it Python would import, read from its files without importing it) and one module
per upstream (``megatron``, ``torchtitan``, ``maxtext``) with the releases its patches support.

It imports nothing of Primus but itself (``packaging`` and the standard library only), so the config tables,
the patch registry, the commands and the generated docs read the supported ranges without reaching into a
backend; the backends' patches import them too."""
