"""The TorchTitan releases the patches were written and tested for, and the two API generations within
them. Where upstream changed between them, a hook point declares one patch per generation (the registry
installs the one whose range matches); the logic they share knows no version.

- ``TOML_JOB_CONFIG`` (0.2.2): ``JobConfig`` dataclasses filled from a TOML job file
  (``--job.config_file``), ``torchtitan.train.main(Trainer)``, module-level
  ``_build_metric_logger(job_config, parallel_dims, tag)``, FSDP set up in
  ``models/llama3/infra/parallelize.py``, learning rate logged as ``lr``.
- ``CONFIGURABLE`` (0.3.x): ``Configurable`` configs from a Python config function (``--module/--config``),
  ``MetricsProcessor._build_metric_logger`` with keyword arguments, FSDP in ``distributed/fsdp.py``,
  learning rate logged as ``lr/<optimizer>``."""

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
