"""The functional API's call cache: what it holds, how well it serves, how big it may grow.

Each distinct call of ``conv_transpose`` and friends (shapes, strides, dtype,
attributes) compiles its op once and keeps it in a least-recently-used cache, so a
repeated call is one native call. Fused calls (``post_ops=``, int8 ``quantize=``,
and ``compile_op`` with them) are entries of the same cache, counted apart in
``CacheInfo.fused``; a single-op ``compile_op`` result is the caller's own and
never enters it.

Examples
--------
>>> import onednn_graph as og
>>> og.cache.set_cache_capacity(64)
>>> og.cache.cache_info().capacity
64
>>> og.cache.set_cache_capacity(256)
"""

from __future__ import annotations

from . import _impl
from ._impl.compiled import CacheInfo, cache_info, cached_ops, clear_cache, set_cache_capacity

__all__ = ["cache_info", "CacheInfo", "cached_ops", "clear_cache", "set_cache_capacity"]
_impl.export(__name__, cache_info, CacheInfo, cached_ops, clear_cache, set_cache_capacity)


def __dir__() -> list[str]:
    return list(__all__)
