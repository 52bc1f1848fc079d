"""Memory that PyTorch's and NumPy's CPU arrays free, kept in the process's heap for the next
allocation (``onednn_graph.system.keep_freed_memory``).

glibc's malloc maps each block above a threshold fresh from the system and unmaps it on
free; the threshold rises to the size of a mapped block freed (up to 32 MiB), and the heap's
top is given back to the system past a trim threshold. Which of a model's tensors end up
mapped afresh therefore depends on what the process allocated before, and each page of a
fresh block faults on first touch: a Mask R-CNN mask head's inference in eval (32 RoIs,
f32, Zen 4) took 25,024 faults a call and 63-78 ms in four processes, and 0 faults and
37-39 ms with both thresholds fixed (``MALLOC_MMAP_THRESHOLD_=33554432
MALLOC_TRIM_THRESHOLD_=1073741824``, the same settings as ``mallopt``). That is the run to
run spread of a model whose tensors are tens of MB, stock or converted alike. Fixing the
thresholds keeps freed blocks up to 32 MiB in the heap, warm, at the cost of the process
holding its peak heap: what jemalloc and tcmalloc (IPEX's and PyTorch's CPU launchers
preload them) do by their own rules. The package changes nothing unless asked: the setting
is process-wide, and glibc gives no way back to its moving thresholds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Optional

__all__ = ["keep", "kept"]

#: mallopt's parameters (malloc.h) and the largest mapping threshold glibc takes on 64-bit
#: (HEAP_MAX_SIZE / 2): blocks above it are mapped whatever the setting.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20
#: The free space at the heap's top kept before any is given back.
TRIM_THRESHOLD = 1 << 30

_kept: Optional[dict[str, int]] = None


def keep() -> bool:
    """Fixes glibc's thresholds (``MMAP_THRESHOLD``, ``TRIM_THRESHOLD``); False where the
    C library has no ``mallopt`` (not glibc) or refuses them."""
    global _kept
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    if not (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        return False
    _kept = {"mmap_threshold": MMAP_THRESHOLD, "trim_threshold": TRIM_THRESHOLD}
    return True


def kept() -> Optional[dict[str, int]]:
    """The thresholds ``keep`` set in this process, or None."""
    return None if _kept is None else dict(_kept)
