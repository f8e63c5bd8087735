"""`python -m rocmtui`."""

import sys

from rocmtui.cli.main import main

sys.exit(main())
