"""Megatron-Bridge lives in its own environment (.venv-bridge, an overlay of .venv built by
scripts/setup-bridge-venv.sh as part of the set-up): its trainings run in subprocesses on that interpreter, and
this process (the main .venv) reads back what the trackers received."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bridge_runs, beside the tests
