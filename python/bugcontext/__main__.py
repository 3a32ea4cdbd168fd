"""``python -m bugcontext``: the command line (:func:`bugcontext.integrations.cli.main`)."""

from bugcontext.integrations.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
