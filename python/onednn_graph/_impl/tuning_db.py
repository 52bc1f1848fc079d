"""The tuning database: what ``tune=True`` measured, kept on disk per machine, so
that tuning is paid once per machine and not once per process.

A decision (which formulation of a problem ran fastest, on how many threads)
holds only for the machine that measured it: the CPU model and the ISA oneDNN
dispatches to, oneDNN's thread count, and the oneDNN and package versions.
Those make the *machine key*; each machine key has a file of its own,
``tuning-<hash>.json`` in the database directory, holding the key in full and
the decisions by *problem key* (a hash of everything ``_call.prepare``
compiles for: the op as lowered, the dtype, every array's shape and strides,
a constant input, a thread count the caller fixed).

The directory is ``$ONEDNN_GRAPH_TUNING_DB`` when set (``off`` keeps decisions
in memory only), else ``$XDG_CACHE_HOME/onednn-graph`` or
``~/.cache/onednn-graph``. The file is read at first use. A new decision is
merged into the file under an exclusive ``flock`` on a lock file beside it (so
processes that tune at once lose nothing) and written to a temporary file that
replaces the old one (so a reader never sees half a file). A file that cannot
be read as this format is ignored, with a warning, and replaced at the next
write; one that cannot be written leaves the decisions in memory, with a
warning.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from . import version as _version

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the replace stays atomic, merging unlocked
    fcntl = None  # type: ignore[assignment]

ENV = "ONEDNN_GRAPH_TUNING_DB"
#: 2: decisions carry the verdict that made them (_tuning.verdict: a clear winner on a
#: quiet machine); format-1 decisions may have been made on a busy machine, so a
#: format-1 file is ignored (with a warning) and its problems are measured again.
FORMAT = 2
_OFF = {"", "off", "0", "none"}


def default_directory() -> Optional[Path]:
    """Where the database lives now (``None``: ``$ONEDNN_GRAPH_TUNING_DB`` is ``off``)."""
    value = os.environ.get(ENV)
    if value is not None:
        return None if value.strip().lower() in _OFF else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "onednn-graph"


def machine() -> dict[str, Any]:
    """What a decision holds for: CPU, ISA, threads, oneDNN and package versions."""
    v = _version.onednn_version()
    return {"cpu": _version.cpu_model(), "isa": _version.cpu_isa(),
            "threads": _version.onednn_threads()[0],
            "onednn": f"{v.major}.{v.minor}.{v.patch} ({v.hash}, {v.cpu_runtime})",
            "package": _version.package_version()}


def _digest(value: Any, length: int = 16) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def problem_key(value: Any) -> str:
    """The key of a problem described by JSON-able `value` (the same in every process)."""
    return _digest(value, 32)


@dataclass(frozen=True)
class TuningEntry:
    """One stored decision: for `problem`, the formulation `kind` (how the package
    describes it: `lowering`) on `threads` OpenMP threads (0: oneDNN's default)
    was chosen; `seconds` holds every candidate's median seconds per call,
    `measured` when (UTC, ISO 8601), and `verdict` how it was chosen
    (``Operation.tuning_verdict``: a clear winner, or the default where none was)."""

    key: str
    problem: str
    kind: str
    lowering: str
    threads: int
    seconds: dict[str, float]
    measured: str
    verdict: str = ""


class TuningDatabase:
    """The decisions of ``tune=True`` for this machine, in `directory` (None: in
    memory only). ``onednn_graph.tuning.tuning_database()`` returns the one in use.

    Examples
    --------
    >>> import onednn_graph as og
    >>> db = og.tuning.tuning_database()
    >>> sorted(db.machine)
    ['cpu', 'isa', 'onednn', 'package', 'threads']
    """

    def __init__(self, directory: Optional[Path]) -> None:
        self.directory = directory
        self.machine = machine()
        self._decisions: Optional[dict[str, dict[str, Any]]] = None
        self._warned = False

    @property
    def path(self) -> Optional[Path]:
        """This machine's file (it may not exist yet), or None in memory only."""
        if self.directory is None:
            return None
        return self.directory / f"tuning-{_digest(self.machine, 12)}.json"

    def get(self, key: str) -> Optional[dict[str, Any]]:
        """The decision stored under `key`, or None."""
        return self._loaded().get(key)

    def put(self, key: str, decision: dict[str, Any]) -> None:
        """Store `decision` under `key`, here and in the file."""
        decision = dict(decision, measured=datetime.datetime.now(datetime.timezone.utc)
                        .isoformat(timespec="seconds"))
        self._loaded()[key] = decision
        if self.path is None:
            return
        try:
            with self._locked():
                on_disk = self._read()
                on_disk[key] = decision
                self._write(on_disk)
                self._decisions = on_disk  # what other processes stored meanwhile, too
        except OSError as exc:
            self._warn(f"cannot write the tuning database {self.path} ({exc}); "
                       "decisions are kept for this process only")

    def entries(self) -> list[TuningEntry]:
        """Every decision stored for this machine (the file as it is now), oldest first."""
        self._decisions = None  # re-read: another process may have added some
        found = [TuningEntry(key=k, problem=d.get("problem", ""), kind=d.get("kind", ""),
                             lowering=d.get("lowering", ""), threads=int(d.get("threads", 0)),
                             seconds=dict(d.get("seconds", {})), measured=d.get("measured", ""),
                             verdict=d.get("verdict", ""))
                 for k, d in self._loaded().items()]
        return sorted(found, key=lambda e: e.measured)

    def clear(self, every_machine: bool = False) -> int:
        """Forget this machine's decisions (with `every_machine`, every machine's
        file in the directory); returns how many decisions were dropped."""
        dropped = len(self._loaded())
        self._decisions = {}
        if self.directory is None:
            return dropped
        paths = sorted(self.directory.glob("tuning-*.json")) if every_machine else [self.path]
        for path in paths:
            assert path is not None
            if every_machine and path != self.path:
                with contextlib.suppress(OSError):
                    dropped += len(_read_file(path).get("decisions", {}))
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        return dropped

    def __len__(self) -> int:
        return len(self._loaded())

    def __repr__(self) -> str:
        where = self.path if self.path is not None else "memory only"
        return f"TuningDatabase({where}, {len(self)} decisions)"

    # -- the file ---------------------------------------------------------------

    def _loaded(self) -> dict[str, dict[str, Any]]:
        if self._decisions is None:
            self._decisions = self._read() if self.path is not None else {}
        return self._decisions

    def _read(self) -> dict[str, dict[str, Any]]:
        assert self.path is not None
        try:
            doc = _read_file(self.path)
        except OSError as exc:
            self._warn(f"cannot read the tuning database {self.path} ({exc}); tuning as if it were empty")
            return {}
        if doc and (doc.get("format") != FORMAT or doc.get("machine") != self.machine
                    or not isinstance(doc.get("decisions"), dict)):
            self._warn(f"ignoring the tuning database {self.path}: not format {FORMAT} "
                       "of this machine; it is replaced at the next decision")
            return {}
        return dict(doc.get("decisions", {}))

    def _write(self, decisions: dict[str, dict[str, Any]]) -> None:
        assert self.path is not None
        doc = {"format": FORMAT, "machine": self.machine, "decisions": decisions}
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a", encoding="utf-8") as lock:
            if fcntl is not None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            yield  # closing the file releases the lock

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(f"onednn_graph: {message}", RuntimeWarning, stacklevel=4)


def _read_file(path: Path) -> dict[str, Any]:
    """The JSON document at `path`; {} when there is none; a marker that fails the
    format check when it is not a JSON object. Raises OSError when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except ValueError:
        return {"format": None}
    return doc if isinstance(doc, dict) else {"format": None}


_current: Optional[TuningDatabase] = None


def tuning_database() -> TuningDatabase:
    """The tuning database in use: this machine's decisions in
    ``$ONEDNN_GRAPH_TUNING_DB`` (``off``: in memory only), else in
    ``$XDG_CACHE_HOME/onednn-graph`` or ``~/.cache/onednn-graph``.

    ``compile_op(..., tune=True)`` and ``set_tuning(True)`` look a problem up
    here first: a stored decision compiles only the chosen formulation and
    times nothing. ``onednn-graph tuning`` shows and clears it,
    ``onednn-graph tune CASE.json`` fills it ahead of time.
    """
    global _current
    directory = default_directory()
    if _current is None or _current.directory != directory:
        _current = TuningDatabase(directory)
    return _current
