"""``python -m bugcontext.evaluation``: ``bugcontext eval``."""

import sys

from bugcontext.evaluation.command import main

sys.exit(main())
