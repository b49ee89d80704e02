"""The error every layer raises for settings the user has to change, so the layers that only pass it on (the patch
guard, the entry points) can tell it from a bug without knowing who raised it."""

from __future__ import annotations


class SettingsError(ValueError):
    """Settings that cannot work, refused on purpose before training starts; the message names the key, the value
    and the fix. A patch raising it is doing its job: the patch guard passes it on and does not disable the patch,
    and an entry point prints the message alone, without a traceback."""
