"""The pure-Python reference implementation, with the public API of :mod:`bugcontext`.

:func:`build`, :func:`build_many`, :func:`cache_key`, :func:`stale` and :class:`ContextBuilder`
are the specification of the Rust engine (:mod:`bugcontext.core.reference`, read it to learn
the contract); :func:`build_table` is the specification of the columnar path
(:func:`bugcontext.batch.table.reference_build_table`: one :func:`build` per group of the
table's rows, in pure Python over ``pyarrow``). Hypothesis differential tests hold each equal
to its native counterpart: same results, same errors.
"""

from bugcontext.batch.table import reference_build_table as build_table
from bugcontext.core.reference import ContextBuilder, build, build_many, cache_key, stale

__all__ = ["ContextBuilder", "build", "build_many", "build_table", "cache_key", "stale"]
