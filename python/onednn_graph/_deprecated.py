"""Top-level names that moved into modules, kept working for one more release.

``onednn_graph`` once exported the call cache, tuning and this installation's report
as top-level functions; they now live in ``onednn_graph.cache``, ``.tuning`` and
``.system``. Until the next release the old spelling still resolves (the package's
``__getattr__``, PEP 562) with a DeprecationWarning naming the new place. The names
are in neither ``__all__`` nor ``dir()``, so nothing new is written against them.
"""

from __future__ import annotations

import importlib
import types
import warnings
from typing import Any

#: old top-level name -> the public module that holds it now, under the same name
MOVED = {
    **dict.fromkeys(["cache_info", "CacheInfo", "cached_ops", "clear_cache",
                     "set_cache_capacity"], "cache"),
    **dict.fromkeys(["set_tuning", "tuning_enabled", "tuning_database", "TuningDatabase",
                     "TuningEntry"], "tuning"),
    **dict.fromkeys(["capabilities", "cpu_isa", "onednn_version", "onednn_allocations",
                     "reset_onednn_peak"], "system"),
}


def moved(name: str) -> Any:
    """The object the old top-level `name` stands for, warning where it went;
    AttributeError, as for any missing attribute, for a name that never was."""
    module = MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'onednn_graph' has no attribute {name!r}")
    # stacklevel 3: past this function and the package's __getattr__, to the line
    # that spelled the old name (what a filter on the caller's module matches).
    warnings.warn(f"onednn_graph.{name} is deprecated: use onednn_graph.{module}.{name} "
                  "(the top-level name goes in the next release)", DeprecationWarning,
                  stacklevel=3)
    return getattr(importlib.import_module(f"onednn_graph.{module}"), name)


class CallableReproducerModule(types.ModuleType):
    """``onednn_graph.reproducer``: the module, which the top-level function of the
    same name used to shadow. Calling the module still calls that function, warning."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        warnings.warn("onednn_graph.reproducer(...) is deprecated: use "
                      "onednn_graph.reproducer.reproducer(...) (the module stops being "
                      "callable in the next release)", DeprecationWarning, stacklevel=2)
        return self.reproducer(*args, **kwargs)
