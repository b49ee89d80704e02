import sys

from primus.docs_gen.generate import main

sys.exit(main())
