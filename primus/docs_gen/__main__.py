"""``python -m primus.docs_gen [--check]``: write the generated docs, or check them (``generate.main``)."""

import sys

from primus.docs_gen.generate import main

sys.exit(main())
