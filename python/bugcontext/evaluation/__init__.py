"""Evaluation tooling: real-bug preparation (downloads, virtual environments, pytest runs),
the strategy comparison behind ``bugcontext eval`` and its report.

Tooling, not the library: nothing in :mod:`bugcontext` outside this subpackage imports it,
except the command line, which registers the ``eval`` subcommand.

* :mod:`.realbugs`: the cases (``realbugs.json``) and their preparation from PyPI;
* :mod:`.evaluate`: gathering once per case, then every strategy at every budget;
* :mod:`.report`: the Markdown report and the coverage chart;
* :mod:`.command`: the ``eval`` subcommand.
"""
