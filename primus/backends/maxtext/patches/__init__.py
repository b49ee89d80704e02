"""Patches on upstream MaxText, one module per hook point, in the order ``backend.py`` lists them."""
