"""Tuning: measuring every formulation of a problem and keeping the fastest.

``compile_op(..., tune=True)`` tunes one op; ``set_tuning(True)`` lets the
functional API tune every new problem. What tuning measured is kept on disk, per
machine (``tuning_database()``), so each problem is measured once per machine;
``onednn-graph tuning`` shows and clears it, ``onednn-graph tune CASE.json`` fills
it ahead of time.
"""

from __future__ import annotations

from . import _impl
from ._impl.call import set_tuning, tuning_enabled
from ._impl.tuning_db import TuningDatabase, TuningEntry, tuning_database

__all__ = ["set_tuning", "tuning_enabled", "tuning_database", "TuningDatabase", "TuningEntry"]
_impl.export(__name__, set_tuning, tuning_enabled, tuning_database, TuningDatabase, TuningEntry)


def __dir__() -> list[str]:
    return list(__all__)
