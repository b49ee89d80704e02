"""The run's statuses and the built-in sinks' names as string enums: each compares equal to, and is written to
JSON and the journal as, its plain string (plugin sinks keep plain strings)."""

import sys
from enum import Enum

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # the core runs on 3.10, which has no StrEnum

    class StrEnum(str, Enum):
        def __str__(self) -> str:
            return self.value


class RunStatus(StrEnum):
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    KILLED = "KILLED"


ENDED = (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.KILLED)  # what a run may finish with


class SinkName(StrEnum):
    TENSORBOARD = "tensorboard"
    WANDB = "wandb"
    MLFLOW = "mlflow"
    COMET = "comet"
