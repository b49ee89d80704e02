"""The TorchTitan releases the patches were written and tested for, and the two API generations within them (where
upstream changed, a hook point declares one patch per generation; the logic they share knows no version):
``TOML_JOB_CONFIG`` (0.2.2): ``JobConfig`` dataclasses from a TOML job file, ``train.main(Trainer)``, a
module-level ``_build_metric_logger``, FSDP in ``models/llama3/infra/parallelize.py``, learning rate as ``lr``;
``CONFIGURABLE`` (0.3.x): ``Configurable`` configs from a config function (``--module/--config``),
``MetricsProcessor._build_metric_logger``, FSDP in ``distributed/fsdp.py``, learning rate as ``lr/<optimizer>``."""

from primus.upstreams.release import Upstream

TOML_JOB_CONFIG = ">=0.2.2,<0.3"
CONFIGURABLE = ">=0.3.0,<0.4"

TORCHTITAN = Upstream(
    name="TorchTitan",
    distribution="torchtitan",
    package="torchtitan",
    supported=">=0.2.2,<0.4",
    version_files=("__init__.py", "../assets/version.txt"),
)  # a source checkout: the repo's file
