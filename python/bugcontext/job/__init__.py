"""Layer 3, the context job: from a failing test in a repository to the prompt section.
:mod:`.sources` proposes candidates (the failure, coverage and re-run evidence, references,
search); :mod:`.workspace` runs the job and keeps what it derives in memory and in the disk
cache (:mod:`._cache`). Imports only the layers below it."""
