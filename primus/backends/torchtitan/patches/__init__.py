"""Patches on upstream torchtitan, one module per hook point, in the order ``backend.py`` lists them; where the two
API generations (``primus/upstreams/torchtitan.py``) differ, a module declares one patch per generation."""
