"""Goodput and badput of a run directory across its attempts: the accounting, and its feed on the hub's thread."""
