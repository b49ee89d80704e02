"""The upstream trainers Primus patches, declared at the bottom of the layers: ``release`` (what a declaration
holds, and which release of it Python would import, read from its files without importing it), one module per
upstream (``megatron``, ``torchtitan``, ``maxtext``, ``megatron_bridge``) with the releases its patches support, and
``backends``: each backend as one object, found through its entry point.

It imports nothing of Primus but itself and ``primus.plugins`` (``packaging`` and the standard library only), so
the config tables, the patch registry, the commands and the generated docs read the supported ranges and the
backends without reaching into a backend's code; the backends' patches import them too."""
