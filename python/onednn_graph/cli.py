"""The ``onednn-graph`` command: ``info``, ``run``, ``tune`` and ``tuning``.

``run`` replays graphs in oneDNN's JSON format with benchdnn-style overrides
(``overrides.py``), on oneDNN through the spec-level Graph (``_tools/runner.py``;
``--mode perf`` times each op as the functional API runs it, on its thread count
or ``--threads``), and prints one line per case plus a summary table, or with
``--json`` one JSON document. Exit status: 0 when every case passed, 1 when a case failed
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
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, NoReturn, Optional, Sequence

from . import _core, batch as _batch, graph_json, overrides
from ._impl import version as _version
from ._tools import runner as _runner
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
    p.add_argument("--mb", default="", metavar="N", help="a new minibatch for the inputs that "
                   "carry one (0: the file's)")
    p.add_argument("--op-kind", default="", metavar="OPID:KIND+...",
                   help="another kind for a binary or eltwise op, e.g. 3:Multiply")
    p.add_argument("--tensor-property", default="", metavar="ID:PROPERTY+...",
                   help="undef, variable or constant for a tensor")
    p.add_argument("--expected-n-partitions", default="", metavar="N",
                   help="partitions oneDNN must return (benchdnn 3.13's check; default 1, "
                   "0 skips it)")
    p.add_argument("--attr-fpmath", default="", metavar="MODE",
                   help="the graph's fpmath mode: strict, bf16, f16, tf32 or any")


def _mode(text: str) -> str:
    mode = _batch.MODES.get(text.lower())
    if mode is None:
        raise argparse.ArgumentTypeError(f"invalid mode {text!r}: choose from correctness (C), "
                                         "exact, perf (P), list (L)")
    return mode


#: Columns `onednn-graph info` fits its report in, unless --wide.
INFO_WIDTH = 100


class _Version(argparse.Action):
    """--version, read when given (the versions come from the linked library)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        from ._tools import info as _info
        print(_info.version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="onednn-graph", description="oneDNN Graph JSON cases: inspect, "
                     "replay and verify on oneDNN.")
    parser.add_argument("--version", action=_Version,
                        help="print the package's and oneDNN's versions and oneDNN's ISA")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    info = sub.add_parser("info", help="versions, CPU, and what the linked oneDNN can do")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.add_argument("--all", action="store_true", help="every detail: oneDNN's kernel for "
                      "each op and dtype, and its answer for each feature as the spec writes it "
                      "(default: a summary)")
    info.add_argument("--wide", action="store_true", help=f"tables one row per line, however "
                      f"wide (default: every line within {INFO_WIDTH} columns)")
    run = sub.add_parser("run", help="run JSON cases on oneDNN and check or time them")
    _case_options(run)
    run.add_argument("--batch", action="append", default=[], metavar="FILE",
                     help="a benchdnn graph batch file (e.g. op/harness_f32_all), read as "
                     "benchdnn reads it")
    run.add_argument("--inputs-root", default=None, metavar="DIR",
                     help="where --case= and --batch= paths in batch files are found "
                     "(benchdnn's inputs/graph; default: the folder holding the batch file's "
                     "op/ or pattern/)")
    run.add_argument("--mode", type=_mode, default="correctness",
                     help="correctness (C): random inputs vs the reference; exact: small-integer "
                     "inputs, results must match exactly; perf (P): compile and execution times; "
                     "list (L): read and rewrite the cases, run none")
    run.add_argument("--repeat", type=int, default=10, help="executions timed in perf mode")
    run.add_argument("--threads", type=int, default=None, metavar="N",
                     help="perf mode: run each op on N OpenMP threads (0: oneDNN's default, all); "
                     "default: the functional API's choice for the problem (1 below 1 MFLOP)")
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


Case = _batch.Case


def command_line_knobs(ns: argparse.Namespace) -> _batch.Knobs:
    """The graph knobs of the command line, each split into its alternatives."""
    return _batch.Knobs(**{attr: getattr(ns, attr).split(",")
                           for attr in _batch.KNOBS.values()})


def expand(ns: argparse.Namespace) -> list[Case]:
    """Cases of the command line's files: every file times every alternative."""
    return _batch.cases_of(list(ns.cases) + list(ns.case), command_line_knobs(ns))


def load(case: Case) -> Graph:
    """The case's graph with its overrides applied (OSError, TypeError or ValueError
    for bad input; runner.OutsideTheDriver for a graph of ops the driver cannot check)."""
    graph = graph_json.load_graph(case.path)
    outside = _runner.outside_the_driver(graph)
    if outside:
        raise _runner.OutsideTheDriver(f"{', '.join(outside)}: outside the package's ops "
                                       f"({', '.join(_runner.REFERENCED)} and their epilogue)")
    return overrides.apply(
        graph,
        overrides.parse_in_shapes(case.in_shapes) if case.in_shapes else None,
        overrides.parse_op_attrs(case.op_attrs) if case.op_attrs else None,
        overrides.parse_dt(case.dt) if case.dt and case.dt != "undef" else None,
        mb=overrides.parse_mb(case.mb) if case.mb else 0,
        op_kind=overrides.parse_op_kind(case.op_kind) if case.op_kind else None,
        tensor_property=overrides.parse_tensor_property(case.tensor_property)
        if case.tensor_property else None,
        fpmath_mode=case.attr_fpmath or None)


def _take_cases(parser: argparse.ArgumentParser, ns: argparse.Namespace,
                extra: list[str]) -> None:
    """Case files after options (argparse leaves them over) join the cases."""
    unknown = [w for w in extra if w.startswith("-") or not hasattr(ns, "cases")]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if extra:
        ns.cases = list(ns.cases) + extra


#: Statuses, and the benchdnn counts each adds to (benchdnn's ``parse_result``:
#: unimplemented and invalid arguments are failures too).
BENCHDNN_COUNTS = {"PASS": ("passed",), "DONE": ("passed",), "SKIPPED": ("skipped",),
                   "LISTED": ("listed",), "FAIL": ("failed",), "ERROR": ("failed",),
                   "UNSUPPORTED": ("unimplemented", "failed"),
                   "BAD INPUT": ("invalid_arguments", "failed")}


@dataclass
class Outcome:
    case: Case
    status: str          # PASS, FAIL, UNSUPPORTED, ERROR (oneDNN), BAD INPUT, DONE, SKIPPED, LISTED
    result: Optional[_runner.Result] = None
    message: str = ""

    def as_json(self, mode: str) -> dict[str, Any]:
        r = self.result
        doc: dict[str, Any] = {"case": self.case.path, "label": self.case.label,
                               "origin": self.case.origin, **self.case.knobs(),
                               "mode": self.case.mode or mode, "status": self.status,
                               "message": self.message}
        if r is not None:
            doc.update(compile_ms=r.compile_ms, median_ms=r.median_ms, flops=r.flops,
                       gflops=r.gflops, timed_as=r.timed_as or None, threads=r.threads,
                       lowerings=r.lowerings, partitions=r.partitions, ops=[
                           {"id": c.op_id, "kind": c.kind, "dtype": c.dtype, "terms": c.terms,
                            "passed": c.comparison.ok, "max_abs": c.comparison.max_abs,
                            "max_rel": c.comparison.max_rel} for c in r.checks])
        return doc


def _partitions_expected(case: Case) -> int:
    return overrides.parse_count("--expected-n-partitions", case.expected_n_partitions) \
        if case.expected_n_partitions else 1


def _partition_count_message(result: _runner.Result, expected: int) -> str:
    """Why the partition count differs from the case's, and what to pass to check it."""
    said = f"oneDNN returned {result.partitions} partition(s), the case expects {expected}"
    if result.unsupported_low_precision:
        # benchdnn counts the partitions the library returns; this oneDNN has no kernel
        # for the dtype here and split the chain, which the package runs in f32.
        return (f"{said}: oneDNN {_version.onednn_version()} has no kernel for the case's "
                f"dtype on {_core.cpu_isa()}, so it returned the graph split, "
                f"{result.unsupported_low_precision} of its partitions unsupported, which "
                f"the package runs in f32 between TypeCasts; pass --expected-n-partitions="
                f"{result.partitions} to check the values of this split (0 skips the check)")
    return f"{said} (--expected-n-partitions: benchdnn's default is 1; 0 skips the check)"


def run_case(case: Case, mode: str, repeat: int, seed: int,
             threads: Optional[int] = None) -> Outcome:
    """Load, override, run and check one case (perf mode: on `threads`, None for the
    functional API's choice); never raises for the case's own problems."""
    if case.error:
        return Outcome(case, "BAD INPUT", message=case.error)
    if case.skip:
        return Outcome(case, "SKIPPED", message=case.skip)
    mode = case.mode or mode
    try:
        graph = load(case)
        expected = _partitions_expected(case)
        if mode == "list":
            return Outcome(case, "LISTED")
        result = _runner.run(graph, perf=mode == "perf", exact=mode == "exact",
                             repeat=repeat, seed=seed, threads=threads)
    except _runner.OutsideTheDriver as exc:
        return Outcome(case, "SKIPPED", message=str(exc))
    except (OSError, TypeError, ValueError) as exc:
        return Outcome(case, "BAD INPUT", message=str(exc))
    except MemoryError:
        return Outcome(case, "BAD INPUT", message="not enough memory on this machine for the "
                       "case's tensors")
    except UnsupportedError as exc:  # a valid case the linked oneDNN cannot run
        return Outcome(case, "UNSUPPORTED", message=str(exc))
    except Error as exc:
        return Outcome(case, "ERROR", message=str(exc))
    except Exception as exc:  # a bug of the package: reported as the case's, never a traceback
        return Outcome(case, "ERROR", message=f"unexpected {type(exc).__name__} in onednn-graph "
                       f"(a bug: please report it with this case): {exc}")
    if expected and result.partitions != expected:
        return Outcome(case, "FAIL", result, _partition_count_message(result, expected))
    if result.passed is None:
        return Outcome(case, "DONE", result, "--threads does not apply to a graph timed as "
                       "oneDNN's partitions (an epilogue, an fpmath mode): they run on oneDNN's "
                       "default threads, as the functional API's fused calls do"
                       if threads is not None and result.timed_as == "partitions" else "")
    failed = [str(c.comparison) for c in result.checks if not c.comparison.ok]
    return Outcome(case, "PASS" if result.passed else "FAIL", result, "; ".join(failed))


def benchdnn_summary(outcomes: Sequence[Outcome]) -> dict[str, int]:
    """benchdnn's closing counts: tests, passed, skipped, mistrusted, unimplemented,
    invalid_arguments, failed, listed."""
    counts = dict.fromkeys(("tests", "passed", "skipped", "mistrusted", "unimplemented",
                            "invalid_arguments", "failed", "listed"), 0)
    for o in outcomes:
        counts["tests"] += 1
        for name in BENCHDNN_COUNTS[o.status]:
            counts[name] += 1
    return counts


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
             "GFLOP/s", "threads")]
    for o in outcomes:
        r = o.result  # None when nothing ran (a Result is false when it did not pass)
        checks = r.checks if r is not None else []
        max_abs = max((c.comparison.max_abs for c in checks), default=None)
        max_rel = max((c.comparison.max_rel for c in checks), default=None)
        compile_ms, median_ms, gflops = (r.compile_ms, r.median_ms, r.gflops) if r is not None \
            else (None, None, None)
        threads = ",".join(map(str, r.thread_counts())) if r is not None and r.threads else "-"
        rows.append((o.case.label, o.status, _fmt(max_abs, ".3g"), _fmt(max_rel, ".3g"),
                     _fmt(compile_ms, ".1f"), _fmt(median_ms, ".3f"), _fmt(gflops, ".3g"), threads))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def exit_status(outcomes: Sequence[Outcome]) -> int:
    statuses = {o.status for o in outcomes}
    if "BAD INPUT" in statuses:
        return EXIT_BAD_INPUT
    return EXIT_PASS if statuses <= {"PASS", "DONE", "SKIPPED", "LISTED"} else EXIT_FAIL


def _batch_cases(ns: argparse.Namespace) -> list[Case]:
    """The cases of the --batch files: the command line's knobs hold until a --reset."""
    cases: list[Case] = []
    for path in ns.batch:
        root = ns.inputs_root or _batch.inputs_root_of(path)
        locator = _batch.Locator(root)
        found = path if os.path.isfile(path) else locator.find(path)
        if found is None:
            raise OSError(f"--batch {path}: no such file (looked in {locator.looked_in()})")
        state = _batch.State(knobs=command_line_knobs(ns))
        cases += _batch.read_batch(found, locator, state)
    return cases


def _missing_case_files(ns: argparse.Namespace) -> str:
    """'' when every case file the command line names exists, else one line naming
    those that do not and where they were looked for (every case of a missing file
    would otherwise say the same thing, once per --dt or override alternative)."""
    missing = [p for p in dict.fromkeys(list(ns.cases) + list(ns.case)) if not os.path.isfile(p)]
    if not missing:
        return ""
    where = f" (looked in {os.getcwd()})" if any(not os.path.isabs(p) for p in missing) else ""
    return f"case file{'s' * (len(missing) > 1)} not found: {', '.join(missing)}{where}"


def cmd_run(ns: argparse.Namespace) -> int:
    missing = _missing_case_files(ns)
    if missing:
        print(f"onednn-graph run: {missing}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        cases = expand(ns) + _batch_cases(ns)
    except (OSError, ValueError) as exc:
        print(f"onednn-graph run: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not cases:
        print("onednn-graph run: no case given (CASE.json, --case or --batch)", file=sys.stderr)
        return EXIT_BAD_INPUT
    if ns.repeat < 1:
        print("onednn-graph run: --repeat must be >= 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    if ns.threads is not None and ns.threads < 0:
        print("onednn-graph run: --threads must be >= 0 (0: oneDNN's default)", file=sys.stderr)
        return EXIT_BAD_INPUT
    if ns.threads and not _core.can_limit_threads():
        print(f"onednn-graph run: --threads {ns.threads} has no effect here: the package sets "
              "a call's threads only where oneDNN uses OpenMP", file=sys.stderr)
    show = ns.progress == "on" or ns.progress == "auto" and sys.stderr.isatty()
    outcomes = []
    for i, case in enumerate(cases):
        if show:
            _progress(i, len(cases), case.label)
        outcome = run_case(case, ns.mode, ns.repeat, ns.seed, ns.threads)
        outcomes.append(outcome)
        if not ns.json:
            if show:
                sys.stderr.write("\r" + " " * 100 + "\r")
            print(_case_line(i, outcome, ns.mode), flush=True)
    if show:
        _progress(len(cases), len(cases), "done")
    summary = benchdnn_summary(outcomes)
    if ns.json:
        counts = {s: sum(o.status == s for o in outcomes) for s in {o.status for o in outcomes}}
        print(json.dumps({"mode": ns.mode, "seed": ns.seed, "repeat": ns.repeat,
                          "threads": ns.threads,
                          "cases": [o.as_json(ns.mode) for o in outcomes],
                          "summary": counts, "benchdnn": summary,
                          "exit_status": exit_status(outcomes)}, indent=2))
    else:
        if not ns.batch:
            print()
            print(table(outcomes))
        tally = ", ".join(f"{sum(o.status == s for o in outcomes)} {s}"
                          for s in dict.fromkeys(o.status for o in outcomes))
        print(f"\n{len(outcomes)} case(s): {tally}")
        print(" ".join(f"{name}:{n}" for name, n in summary.items()))
    return exit_status(outcomes)


def _case_line(index: int, o: Outcome, mode: str) -> str:
    head = f"{index}:{o.status} {o.case.label}"
    pad = " " * 4
    origin = [f"{pad}from {o.case.origin}"] if o.case.origin and o.case.label != o.case.origin \
        else []
    r = o.result
    if r is None:
        return "\n".join([head] + origin + ([f"{pad}{o.message}"] if o.message else []))
    lines = [head] + origin
    for c in r.checks:
        cmp = c.comparison
        bound = "must match exactly" if (o.case.mode or mode) == "exact" else \
            f"bound from {c.terms} f32 terms"
        lines.append(f"{pad}op {c.op_id} {c.kind} ({c.dtype}): max abs err {cmp.max_abs:.3g}, "
                     f"max rel err {cmp.max_rel:.3g}, {bound}"
                     + ("" if cmp.ok else f"\n{pad}{cmp}"))
    if r.median_ms is not None:
        lines.append(f"{pad}compile {r.compile_ms:.1f} ms, median {r.median_ms:.3f} ms, "
                     f"{r.gflops:.3g} GFLOP/s ({r.flops / 1e9:.3g} GFLOP)")
        lines.append(f"{pad}on {r.threads_text()}, {_runner.TIMED_AS[r.timed_as]}")
    lines += [f"{pad}lowered: {text}" for text in r.lowerings]
    if o.message and all(c.comparison.ok for c in r.checks):  # not said by a check above
        lines.append(f"{pad}{o.message}")
    return "\n".join(lines)


def cmd_info(ns: argparse.Namespace) -> int:
    from ._tools import info as _info
    caps = _info.capabilities()
    print(json.dumps(caps, indent=2) if ns.json
          else _info.report(caps, None if ns.wide else INFO_WIDTH, everything=ns.all))
    return EXIT_PASS


def _ms(seconds: Optional[float]) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f} ms"


def cmd_tune(ns: argparse.Namespace) -> int:
    from ._impl import tuning_db as _tuning_db
    missing = _missing_case_files(ns)
    if missing:
        print(f"onednn-graph tune: {missing}", file=sys.stderr)
        return EXIT_BAD_INPUT
    cases = expand(ns)
    if not cases:
        print("onednn-graph tune: no case given (CASE.json or --case)", file=sys.stderr)
        return EXIT_BAD_INPUT
    db = _tuning_db.tuning_database()
    status = EXIT_PASS
    for case in cases:
        try:
            tuned = _runner.tune(load(case))
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
        status = {"info": cmd_info, "run": cmd_run, "tune": cmd_tune,
                  "tuning": cmd_tuning}[ns.command](ns)
        sys.stdout.flush()  # here, so that a closed pipe is seen here and not at exit
        return status
    except BrokenPipeError:
        # `onednn-graph run ... | head -1`: the reader took what it wanted and left, which
        # is no failure (`git log | head` exits 0 too). Output still buffered goes to
        # /dev/null, so that Python's flush at exit does not report the pipe again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PASS


def __dir__() -> list[str]:
    return list(__all__)
