"""`python -m primus.backends.torchtitan [torchtitan args]`: see ``entry``."""

import primus.activation

primus.activation.activate()  # before torchtitan is imported: its patches install on import

from primus.backends.torchtitan.entry import main  # noqa: E402

main()
