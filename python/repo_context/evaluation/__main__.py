"""``python -m repo_context.evaluation``: ``repo-context eval``."""

import sys

from .command import main

sys.exit(main())
