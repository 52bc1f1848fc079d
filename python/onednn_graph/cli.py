"""The ``onednn-graph`` command: ``info``, ``run``, ``tune`` and ``tuning``.

``run`` replays graphs in oneDNN's JSON format with benchdnn-style overrides
(``overrides.py``), on oneDNN through the spec-level Graph (``_runner.py``),
and prints one line per case plus a summary table, or with ``--json`` one
JSON document. Exit status: 0 when every case passed, 1 when a case failed
(numbers out of tolerance, or oneDNN could not compile or run it), 2 on bad
input (unreadable file, unknown op kind/attribute/version, a malformed
override); bad input wins over a failure when both happen.

``tune`` measures each op of the cases as ``compile_op(..., tune=True)`` does
and stores the decisions in the tuning database (``_impl/tuning_db.py``);
``tuning`` shows or clears that database.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import shlex
import sys
from dataclasses import dataclass
from typing import Any, NoReturn, Optional, Sequence

from . import graph_json, overrides
from ._impl import runner as _runner
from .errors import Error, UnsupportedError
from .graph import Graph

__all__ = ["main", "EXIT_PASS", "EXIT_FAIL", "EXIT_BAD_INPUT"]

EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2
MODES = ("correctness", "exact", "perf")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits with 2 too; keep its wording
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _case_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("cases", nargs="*", metavar="CASE.json", help="graph files to run")
    p.add_argument("--case", action="append", default=[], metavar="CASE.json",
                   help="a graph file (benchdnn's spelling; may repeat)")
    p.add_argument("--dt", default="", help="f32, bf16 or f16 for every floating tensor, or "
                   "ID:DT+ID:DT; comma-separated values run each")
    p.add_argument("--in-shapes", default="", metavar="ID:SHAPE[*TAG]+...",
                   help="new input shapes/layouts, e.g. 0:1x28x28x32*abcd; comma-separated "
                   "values run each")
    p.add_argument("--op-attrs", default="", metavar="OPID:NAME:VALUE*NAME:VALUE+...",
                   help="new attribute values, e.g. 0:auto_pad:SAME_UPPER*strides:2x2; "
                   "comma-separated values run each")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="onednn-graph", description="oneDNN Graph JSON cases: inspect, "
                     "replay and verify on oneDNN.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    info = sub.add_parser("info", help="versions, CPU, and what the linked oneDNN can do")
    info.add_argument("--json", action="store_true", help="print JSON")
    run = sub.add_parser("run", help="run JSON cases on oneDNN and check or time them")
    _case_options(run)
    run.add_argument("--batch", action="append", default=[], metavar="FILE",
                     help="a file of case command lines (one per line, # comments)")
    run.add_argument("--mode", choices=MODES, default="correctness",
                     help="correctness: random inputs vs the reference; exact: small-integer "
                     "inputs, results must match exactly; perf: compile and execution times")
    run.add_argument("--repeat", type=int, default=10, help="executions timed in perf mode")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    run.add_argument("--json", action="store_true", help="print one JSON document")
    run.add_argument("--progress", choices=("auto", "on", "off"), default="auto",
                     help="progress bar on stderr (auto: when stderr is a terminal)")
    tune = sub.add_parser("tune", help="tune each op of JSON cases ahead of time (the tuning "
                          "database keeps the decisions)")
    _case_options(tune)
    tuning = sub.add_parser("tuning", help="show or clear the tuning database")
    tuning.add_argument("--clear", action="store_true", help="forget this machine's decisions")
    tuning.add_argument("--every-machine", action="store_true",
                        help="with --clear: every machine's file in the directory")
    tuning.add_argument("--json", action="store_true", help="print JSON")
    return parser


@dataclass
class Case:
    """One run: a file and the overrides' text, as the user wrote them."""

    path: str
    dt: str = ""
    in_shapes: str = ""
    op_attrs: str = ""

    @property
    def label(self) -> str:
        flags = [f"--{n.replace('_', '-')}={v}" for n, v in
                 (("dt", self.dt), ("in_shapes", self.in_shapes), ("op_attrs", self.op_attrs)) if v]
        return " ".join([os.path.basename(self.path)] + flags)

    def load(self) -> Graph:
        """The case's graph with its overrides applied (OSError, TypeError or
        ValueError for bad input)."""
        return overrides.apply(
            graph_json.load_graph(self.path),
            overrides.parse_in_shapes(self.in_shapes) if self.in_shapes else None,
            overrides.parse_op_attrs(self.op_attrs) if self.op_attrs else None,
            overrides.parse_dt(self.dt) if self.dt else None)


def expand(ns: argparse.Namespace) -> list[Case]:
    """Cases of one command line: every file times every comma-separated alternative."""
    paths = list(ns.cases) + list(ns.case)
    alternatives = [v.split(",") for v in (ns.dt, ns.in_shapes, ns.op_attrs)]
    return [Case(p, *combo) for p in paths for combo in itertools.product(*alternatives)]


def _take_cases(parser: argparse.ArgumentParser, ns: argparse.Namespace,
                extra: list[str]) -> None:
    """Case files after options (argparse leaves them over) join the cases."""
    unknown = [w for w in extra if w.startswith("-") or not hasattr(ns, "cases")]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if extra:
        ns.cases = list(ns.cases) + extra


def _batch_cases(path: str) -> list[Case]:
    parser = _Parser(prog=f"batch file {path}")
    _case_options(parser)
    base = os.path.dirname(os.path.abspath(path))
    cases = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            words = shlex.split(line, comments=True)
            if not words:
                continue
            try:
                ns, extra = parser.parse_known_args(words)
                _take_cases(parser, ns, extra)
            except SystemExit:
                raise ValueError(f"{path}:{lineno}: cannot parse {line.strip()!r}") from None
            for c in expand(ns):  # relative case paths are relative to the batch file
                c.path = c.path if os.path.isabs(c.path) else os.path.join(base, c.path)
                cases.append(c)
    return cases


@dataclass
class Outcome:
    case: Case
    status: str                      # PASS, FAIL, UNSUPPORTED, ERROR (oneDNN), BAD INPUT, DONE
    result: Optional[_runner.Result] = None
    message: str = ""

    def as_json(self, mode: str) -> dict[str, Any]:
        r = self.result
        doc: dict[str, Any] = {"case": self.case.path, "dt": self.case.dt,
                               "in_shapes": self.case.in_shapes, "op_attrs": self.case.op_attrs,
                               "mode": mode, "status": self.status, "message": self.message}
        if r is not None:
            doc.update(compile_ms=r.compile_ms, median_ms=r.median_ms, flops=r.flops,
                       gflops=r.gflops, lowerings=r.lowerings, ops=[
                           {"id": c.op_id, "kind": c.kind, "dtype": c.dtype, "terms": c.terms,
                            "passed": c.comparison.ok, "max_abs": c.comparison.max_abs,
                            "max_rel": c.comparison.max_rel} for c in r.checks])
        return doc


def run_case(case: Case, mode: str, repeat: int, seed: int) -> Outcome:
    """Load, override, run and check one case; never raises for the case's own problems."""
    try:
        result = _runner.run(case.load(), perf=mode == "perf", exact=mode == "exact",
                             repeat=repeat, seed=seed)
    except (OSError, TypeError, ValueError) as exc:
        return Outcome(case, "BAD INPUT", message=str(exc))
    except UnsupportedError as exc:  # a valid case the linked oneDNN cannot run
        return Outcome(case, "UNSUPPORTED", message=str(exc))
    except Error as exc:
        return Outcome(case, "ERROR", message=str(exc))
    if result.passed is None:
        return Outcome(case, "DONE", result)
    failed = [str(c.comparison) for c in result.checks if not c.comparison.ok]
    return Outcome(case, "PASS" if result.passed else "FAIL", result, "; ".join(failed))


def _progress(i: int, n: int, label: str) -> None:
    width = 30
    done = width * i // n
    sys.stderr.write(f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n} {label[:60]:<60}")
    if i == n:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _fmt(value: Optional[float], spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(outcomes: Sequence[Outcome]) -> str:
    """The summary table, one row per case."""
    rows = [("case", "result", "max abs err", "max rel err", "compile ms", "median ms",
             "GFLOP/s")]
    for o in outcomes:
        r = o.result
        checks = r.checks if r else []
        max_abs = max((c.comparison.max_abs for c in checks), default=None)
        max_rel = max((c.comparison.max_rel for c in checks), default=None)
        rows.append((o.case.label, o.status, _fmt(max_abs, ".3g"), _fmt(max_rel, ".3g"),
                     _fmt(r.compile_ms if r else None, ".1f"),
                     _fmt(r.median_ms if r else None, ".3f"),
                     _fmt(r.gflops if r else None, ".3g")))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def exit_status(outcomes: Sequence[Outcome]) -> int:
    statuses = {o.status for o in outcomes}
    if "BAD INPUT" in statuses:
        return EXIT_BAD_INPUT
    return EXIT_PASS if statuses <= {"PASS", "DONE"} else EXIT_FAIL


def cmd_run(ns: argparse.Namespace) -> int:
    try:
        cases = expand(ns)
        for path in ns.batch:
            cases += _batch_cases(path)
    except (OSError, ValueError) as exc:
        print(f"onednn-graph run: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not cases:
        print("onednn-graph run: no case given (CASE.json, --case or --batch)", file=sys.stderr)
        return EXIT_BAD_INPUT
    if ns.repeat < 1:
        print("onednn-graph run: --repeat must be >= 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    show = ns.progress == "on" or ns.progress == "auto" and sys.stderr.isatty()
    outcomes = []
    for i, case in enumerate(cases):
        if show:
            _progress(i, len(cases), case.label)
        outcome = run_case(case, ns.mode, ns.repeat, ns.seed)
        outcomes.append(outcome)
        if not ns.json:
            if show:
                sys.stderr.write("\r" + " " * 100 + "\r")
            print(_case_line(outcome, ns.mode), flush=True)
    if show:
        _progress(len(cases), len(cases), "done")
    if ns.json:
        counts = {s: sum(o.status == s for o in outcomes) for s in {o.status for o in outcomes}}
        print(json.dumps({"mode": ns.mode, "seed": ns.seed, "repeat": ns.repeat,
                          "cases": [o.as_json(ns.mode) for o in outcomes],
                          "summary": counts, "exit_status": exit_status(outcomes)}, indent=2))
    else:
        print()
        print(table(outcomes))
        tally = ", ".join(f"{sum(o.status == s for o in outcomes)} {s}"
                          for s in dict.fromkeys(o.status for o in outcomes))
        print(f"\n{len(outcomes)} case(s): {tally}")
    return exit_status(outcomes)


def _case_line(o: Outcome, mode: str) -> str:
    head = f"{o.status:<11} {o.case.label}"
    r = o.result
    if r is None:
        return f"{head}\n            {o.message}"
    lines = [head]
    for c in r.checks:
        cmp = c.comparison
        bound = "must match exactly" if mode == "exact" else f"bound from {c.terms} f32 terms"
        lines.append(f"            op {c.op_id} {c.kind} ({c.dtype}): max abs err {cmp.max_abs:.3g}, "
                     f"max rel err {cmp.max_rel:.3g}, {bound}"
                     + ("" if cmp.ok else f"\n            {cmp}"))
    if mode == "perf":
        lines.append(f"            compile {r.compile_ms:.1f} ms, median {r.median_ms:.3f} ms, "
                     f"{r.gflops:.3g} GFLOP/s ({r.flops / 1e9:.3g} GFLOP)")
    lines += [f"            lowered: {text}" for text in r.lowerings]
    return "\n".join(lines)


def cmd_info(ns: argparse.Namespace) -> int:
    from ._impl import info as _info
    caps = _info.capabilities()
    print(json.dumps(caps, indent=2) if ns.json else _info.report(caps))
    return EXIT_PASS


def _ms(seconds: Optional[float]) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f} ms"


def cmd_tune(ns: argparse.Namespace) -> int:
    from ._impl import tuning_db as _tuning_db
    cases = expand(ns)
    if not cases:
        print("onednn-graph tune: no case given (CASE.json or --case)", file=sys.stderr)
        return EXIT_BAD_INPUT
    db = _tuning_db.tuning_database()
    status = EXIT_PASS
    for case in cases:
        try:
            tuned = _runner.tune(case.load())
        except (OSError, TypeError, ValueError) as exc:
            print(f"{case.label}: BAD INPUT: {exc}")
            status = EXIT_BAD_INPUT
            continue
        except Error as exc:  # UnsupportedError included: a case the linked oneDNN cannot run
            print(f"{case.label}: {type(exc).__name__}: {exc}")
            status = max(status, EXIT_FAIL)
            continue
        for op_id, kind, op in tuned:
            how = op.lowering + (f", on {op.threads} thread(s)" if op.threads else "")
            timed = ", ".join(f"{label}: {_ms(t)}" for label, t in sorted((op.tuning or {}).items()))
            print(f"{case.label} op {op_id} {kind} {op.dtype}: {how}" + (f" ({timed})" if timed else "")
                  + (f"; {op.tuning_verdict}" if op.tuning_verdict else ""))
    where = db.path if db.path is not None else "memory only ($ONEDNN_GRAPH_TUNING_DB=off)"
    print(f"\n{len(db)} decision(s) for this machine in {where}")
    return status


def cmd_tuning(ns: argparse.Namespace) -> int:
    from ._impl import tuning_db as _tuning_db
    db = _tuning_db.tuning_database()
    if ns.every_machine and not ns.clear:
        print("onednn-graph tuning: --every-machine goes with --clear", file=sys.stderr)
        return EXIT_BAD_INPUT
    if ns.clear:
        dropped = db.clear(every_machine=ns.every_machine)
        print(f"cleared {dropped} decision(s)" + (f" from {db.directory}" if db.directory else ""))
        return EXIT_PASS
    entries = db.entries()
    if ns.json:
        print(json.dumps({"path": str(db.path) if db.path else None, "machine": db.machine,
                          "decisions": [dataclasses.asdict(e) for e in entries]}, indent=2))
        return EXIT_PASS
    print(f"tuning database: {db.path if db.path is not None else 'memory only'}")
    print("machine: " + ", ".join(f"{k} {v}" for k, v in db.machine.items()))
    for e in entries:
        print(f"  {e.problem}\n    -> {e.lowering}" + (f", on {e.threads} thread(s)" if e.threads else "")
              + f" ({e.verdict or 'fastest'}; {len(e.seconds)} way(s) timed {e.measured})")
    print(f"{len(entries)} decision(s)")
    return EXIT_PASS


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``onednn-graph`` console script and ``python -m onednn_graph``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    ns, extra = parser.parse_known_args(argv)
    _take_cases(parser, ns, extra)
    try:
        return {"info": cmd_info, "run": cmd_run, "tune": cmd_tune,
                "tuning": cmd_tuning}[ns.command](ns)
    except BrokenPipeError:  # e.g. `onednn-graph run ... | head`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAIL


def __dir__() -> list[str]:
    return list(__all__)
