"""`python -m primus.backends.maxtext [base.yml] [key=value ...]`: see ``entry``."""

import primus.activation

primus.activation.activate()  # before maxtext is imported: its patches install on import

from primus.backends.maxtext.entry import main  # noqa: E402

main()
