"""Checkpoint lineage: what backends' checkpoint hooks call to journal a save, its start and a resume."""
