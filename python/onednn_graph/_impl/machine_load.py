"""How busy other processes keep the machine, and the thread count that follows.

Two readers of one measure, the CPU time other processes (and the hypervisor: steal)
took over an interval, from the machine's counters (/proc/stat) less this process's own
(getrusage):

- tuning (``_impl.tuning``) stores nothing it measured while others took more than
  its share of the machine (``OthersLoad``);
- the functional API runs new problems on fewer threads while others keep CPUs busy
  (``LIMIT``). oneDNN's OpenMP threads spin while they wait (libgomp: about 3 ms): with
  another process's threads on the same cores, each waits for a thread the other has
  descheduled. Two processes of the package with OMP_NUM_THREADS at the core count took
  32 ms a call where one alone took 1.0 ms (2-core Zen 4, ``benchmarks/shared_machine.py``;
  30x on a Zen 3 in the shared-machine issue); on one thread each, 1.8 ms. So every
  ``WINDOW`` seconds at most, on a call, the counters are read again, and where others
  used a CPU or more (in ``BUSY_READINGS`` readings in a row: a passing load does not
  count) the calls run on the CPUs left (at least 1): a signature of its own in the call
  cache, compiled once. A quiet machine pays one clock
  reading per call. ``ONEDNN_GRAPH_LOAD_AWARE=0`` (or ``og.system.set_load_aware(False)``)
  turns it off; ``compile_op(..., threads=N)`` and problems the package runs on one
  thread anyway are never changed. Only where the package sets oneDNN's thread count
  (OpenMP: oneDNN 3.2's wheel); oneDNN 3.13's SYCL runtime runs on TBB, whose workers
  do not spin against another process's.
"""

from __future__ import annotations

import os
import resource
import time
from typing import Any, Callable, Optional

from .. import _core

#: Seconds between two readings of the machine's counters (each moves in 10 ms ticks
#: per CPU: a shorter window would read mostly rounding).
WINDOW = 0.25
#: Others used at least this many CPUs' worth of the window: one CPU is theirs.
BUSY_CPU = 0.5
#: Readings in a row that find others busy before a quiet machine's calls take fewer
#: threads: one reading is a passing load (Inductor's compile workers, whose CPU time the
#: first call after ``torch.compile`` reads over the whole compile: a converted model's
#: first 0.25 s on one thread, 1.4-1.5x its time in a short benchmark). A quiet reading
#: gives every thread back at once.
BUSY_READINGS = 2
LOAD_AWARE_ENV = "ONEDNN_GRAPH_LOAD_AWARE"


def cpu_ticks() -> Optional[tuple[int, int]]:
    """(busy, total) ticks of every CPU of the machine since boot (/proc/stat;
    steal counts as busy), or None where there is no /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


def own_ticks() -> float:
    """This process's CPU time so far, every thread's, in /proc/stat's ticks."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * os.sysconf("SC_CLK_TCK")


def others_share(start: tuple[tuple[int, int], float], end: tuple[tuple[int, int], float]
                 ) -> Optional[float]:
    """The share of the machine's CPU time other processes took between two readings
    of (``cpu_ticks()``, ``own_ticks()``); None where no tick passed."""
    (busy0, total0), own0 = start
    (busy1, total1), own1 = end
    if total1 <= total0:
        return None
    # Each CPU's counters move in whole ticks, so a short interval reads up to about
    # two ticks per CPU too many or too few: not counted.
    others = (busy1 - busy0) - (own1 - own0) - 2 * (os.cpu_count() or 1)
    return max(0.0, others) / (total1 - total0)


class OthersLoad:
    """The share of the machine's CPU time that other processes (and steal) took
    while the block ran: ``share``, or None where the OS does not say."""

    def __enter__(self) -> "OthersLoad":
        self.share: Optional[float] = None
        self._start, self._own = cpu_ticks(), own_ticks()
        return self

    def __exit__(self, *exc: Any) -> None:
        end = cpu_ticks()
        if self._start is not None and end is not None:
            self.share = others_share((self._start, self._own), (end, own_ticks()))


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def threads_left(others_cpus: float, cpus: int) -> int:
    """The thread count for new calls when others keep `others_cpus` CPUs' worth busy
    on a machine of which this process may use `cpus`: 0 (all: oneDNN's default) on a
    quiet machine, else the CPUs left, at least 1 (each count a call meets is compiled
    once, and kept)."""
    taken = int(others_cpus + 1 - BUSY_CPU)  # 0.5 CPU's worth or more counts as one
    return 0 if taken <= 0 else max(1, cpus - taken)


class ThreadLimit:
    """The thread count the functional API gives new problems (``threads``: 0 for all),
    read again from the machine's counters every ``WINDOW`` seconds at most
    (``refresh`` once ``next_check`` has passed: ``_compiled.busy_threads``).
    ``changes`` counts the times it moved."""

    def __init__(self, read: Callable[[], Optional[tuple[int, int]]] = cpu_ticks,
                 own: Callable[[], float] = own_ticks) -> None:
        self.enabled = os.environ.get(LOAD_AWARE_ENV, "").strip().lower() not in \
            ("0", "off", "false", "no") and _core.can_limit_threads()
        self.threads = 0
        self.others_cpus: Optional[float] = None
        self.changes = 0
        self.busy_readings = 0  # readings in a row that found others busy
        self.next_check = 0.0 if self.enabled else float("inf")  # off: never read
        self._read, self._own = read, own
        self._last: Optional[tuple[tuple[int, int], float]] = None

    def refresh(self, now: Optional[float] = None) -> int:
        """Read the counters (when due); returns ``threads``."""
        now = time.monotonic() if now is None else now
        self.next_check = now + WINDOW
        if not self.enabled:
            return self._set(0)
        ticks = self._read()
        reading = None if ticks is None else (ticks, self._own())
        last, self._last = self._last, reading
        if last is None or reading is None:
            return self.threads
        share = others_share(last, reading)
        if share is None:
            return self.threads
        machine = os.cpu_count() or 1
        self.others_cpus = share * machine
        cpus = _usable_cpus()
        left = threads_left(self.others_cpus, cpus)
        limit = left if left < cpus else 0
        self.busy_readings = self.busy_readings + 1 if limit else 0
        if limit and not self.threads and self.busy_readings < BUSY_READINGS:
            return self.threads  # quiet until the load stays (``BUSY_READINGS``)
        return self._set(limit)

    def _set(self, threads: int) -> int:
        if threads != self.threads:
            self.threads = threads
            self.changes += 1
        return threads

    def set_enabled(self, enabled: bool) -> None:
        """On (where the package sets oneDNN's threads: OpenMP) or off."""
        self.enabled = enabled and _core.can_limit_threads()
        self._last, self.busy_readings = None, 0  # (readings start again)
        self.refresh()
        if not self.enabled:
            self.next_check = float("inf")


#: The functional API's (``_impl.call``).
LIMIT = ThreadLimit()
