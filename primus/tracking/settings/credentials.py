"""Whether a tracker's credentials are within reach of this process, without contacting anything."""

from __future__ import annotations

import netrc
import os
from collections.abc import Mapping

WANDB_OFFLINE_MODES = ("offline", "dryrun", "disabled")


def has_wandb_credentials(environ: Mapping[str, str] = os.environ) -> bool:
    """W&B can run: an offline mode, WANDB_API_KEY, or a `wandb login` entry in the netrc file."""
    if environ.get("WANDB_MODE", "").lower() in WANDB_OFFLINE_MODES:
        return True
    if environ.get("WANDB_API_KEY"):
        return True
    host = environ.get("WANDB_BASE_URL", "https://api.wandb.ai").split("://")[-1].split("/")[0]
    try:
        return netrc.netrc(environ.get("NETRC")).authenticators(host) is not None
    except (FileNotFoundError, netrc.NetrcParseError):
        return False
