"""Patches on upstream Megatron-Bridge, one module per hook point, in the order ``backend.py`` lists them."""
