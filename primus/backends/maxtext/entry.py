"""``python -m primus.backends.maxtext [CONFIG.yml] [key=value ...]``: upstream's
``maxtext.trainers.pre_train.train`` with Primus's patches active; the config file is upstream's
``base.yml`` unless the first argument names another ``.yml``. The experiment (PRIMUS_CONFIG, set by
`primus train`) reaches MaxText's config through the pyconfig patch, as it does under ``primus-run``."""

from __future__ import annotations

import os
import sys

UPSTREAM_CONFIG = "base.yml"


def main() -> None:
    from absl import app
    from maxtext.trainers.pre_train import train
    from maxtext.utils.globals import MAXTEXT_CONFIGS_DIR

    from primus.config import ConfigError
    from primus.tracking.plan import TrackingPlanError

    args = sys.argv[1:]
    if not (args and args[0].endswith(".yml")):
        args.insert(0, os.path.join(MAXTEXT_CONFIGS_DIR, UPSTREAM_CONFIG))
    sys.argv = [train.__file__, *args]  # upstream's own program name, as `python -m ...train` has it
    try:
        app.run(train.main)
    except (ConfigError, TrackingPlanError) as e:  # raised before training started: the message is the fix
        sys.exit(f"primus: {e}")
