"""``python -m bugcontext.evaluation``: ``bugcontext eval``."""

import sys

from bugcontext.core._extras import MissingExtraError

try:
    from bugcontext.evaluation.command import main
except MissingExtraError as exc:  # one line naming the extra, as on the command line
    print(f"bugcontext eval: {exc}", file=sys.stderr)
    sys.exit(2)

sys.exit(main())
