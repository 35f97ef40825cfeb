"""``python -m asgdsim``: the ``asgdsim`` command (asgdsim.cli)."""

import sys

from .cli import main

sys.exit(main())
