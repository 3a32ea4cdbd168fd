"""Layer 2, many builds at once: one build per group of an Arrow table's rows (:mod:`.table`),
re-ranking of Parquet files (:mod:`.rerank`) and Ray Data (:mod:`.ray`). Imports only
:mod:`bugcontext.core`."""
