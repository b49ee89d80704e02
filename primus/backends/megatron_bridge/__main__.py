"""`python -m primus.backends.megatron_bridge`: see ``entry``."""

import primus.activation

primus.activation.activate()  # before megatron.bridge is imported: its patches install on import

from primus.backends.megatron_bridge.entry import main  # noqa: E402

main()
