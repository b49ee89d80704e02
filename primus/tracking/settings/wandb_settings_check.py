"""``python -m primus.tracking.settings.wandb_settings_check``: W&B's own settings class judges the ``WANDB_*`` variables
given as a JSON object on stdin, and prints a JSON list of the problems (one line each: the variable, why W&B
refuses it, the fix). Run by ``primus.tracking.settings.environment`` in a child process, so that the training process
never imports W&B."""

from __future__ import annotations

import json
import sys

from primus.redaction import redact_text


def problems(variables: dict[str, str]) -> list[str]:
    from pydantic import ValidationError
    from wandb.sdk.wandb_settings import Settings

    found = []
    for name, value in sorted(variables.items()):
        try:
            Settings().update_from_env_vars({name: value})
        except ValidationError as e:
            reason = e.errors(include_url=False)[0]["msg"]
            if value == "":
                fix = f"it is set but empty, which W&B refuses: unset it (unset {name}) or give it a value"
            else:
                fix = f"give a value W&B accepts, or unset it (unset {name})"
            found.append(f"{name}={redact_text(repr(value))} is not valid for W&B ({reason}): {fix}")
    return found


if __name__ == "__main__":
    print(json.dumps(problems(json.load(sys.stdin))))
