"""What this installation is and can do: ``capabilities()`` and ``onednn-graph info``."""

from __future__ import annotations

import platform
import textwrap
from typing import Any, Optional, Sequence

import ml_dtypes
import numpy as np

from .. import _core
from .._impl import batch_parts as _batch_parts, casts as _casts, freed_memory as _freed_memory, \
    kernels as _kernels, lowering as _lowering, machine_load as _machine_load, version as _version
from . import fusion as _fusion


def _support() -> Optional[list[dict[str, Any]]]:
    try:
        from . import support as _support
    except ImportError:  # pragma: no cover - only on a tree without the probe
        return None
    return _support.summary()


def capabilities() -> dict[str, Any]:
    """A report of this installation, as ``onednn-graph info`` prints it.

    Keys: ``package``, ``onednn`` (version, hash, cpu_runtime), ``numpy``,
    ``ml_dtypes``, ``python``, ``cpu`` (the model name), ``cpu_isa`` (what oneDNN
    dispatches to, after any ``ONEDNN_MAX_CPU_ISA``), ``threads`` (and
    ``threads_source``), ``constant_tensor_cache`` (its current setting; at
    start-up, oneDNN's default), ``batch_parts`` (``_impl.batch_parts.summary``:
    whether memory-bound calls run their batch in parts here), ``load_aware``
    (``set_load_aware``: ``enabled``, ``threads`` new calls get now, 0 for all, and
    ``others_cpus``, the CPUs' worth other processes used at the last reading, None
    before one), ``freed_memory`` (``keep_freed_memory``: the heap thresholds it set,
    None before it), ``kernels``: ``_kernels.summary()``, one dict per
    op and dtype saying which kernel the linked oneDNN has for it on this CPU
    (``kernel``: native, reference or none, and its ``implementation``) and
    how the package runs it (``runs``: native, or ``f32 chain``: in f32 between
    oneDNN TypeCasts), ``faster_in_f32``: whether some bf16/f16 problems run
    as the f32 chain here even where oneDNN has a kernel of its own, and which
    (``_kernels.faster_in_f32_summary``: measured slower on this oneDNN and ISA),
    ``conversions``: ``_casts.summary()``, one dict per
    conversion an f32 chain makes (bf16/f16 to f32 and back) saying who converts
    (``by``: the package where oneDNN's reorder for it here is not a jit one,
    ``onednn_reorder``, else oneDNN) and the package's code path
    (``package_path``), ``fusion``: which post-ops the linked oneDNN fuses after a
    ConvTranspose, its int8 form and the backward-data ops (``_fusion.fusable``), and
    ``support``: ``_support.summary()``, one
    dict per (op, feature) with ``native`` (the linked oneDNN computes it as
    written), ``literal`` (what it does then) and ``package`` (what the package
    does: native, lowered or unsupported), probed on the library at the call.

    Examples
    --------
    >>> import onednn_graph as og
    >>> caps = og.system.capabilities()
    >>> caps["onednn"]["version"].count(".")
    2
    """
    v = _version.onednn_version()
    threads, source = _version.onednn_threads()
    return {
        "package": _version.package_version(),
        "onednn": {"version": f"{v.major}.{v.minor}.{v.patch}", "hash": v.hash,
                   "cpu_runtime": v.cpu_runtime},
        "numpy": np.__version__,
        "ml_dtypes": ml_dtypes.__version__,
        "python": platform.python_version(),
        "cpu": _version.cpu_model(),
        "cpu_isa": _version.cpu_isa(),
        "threads": threads,
        "threads_source": source,
        "constant_tensor_cache": _core.get_constant_tensor_cache(),
        # the threads a busy machine leaves new calls (0: all), from what others use
        "load_aware": {"enabled": _machine_load.LIMIT.enabled,
                       "threads": _machine_load.LIMIT.threads,
                       "others_cpus": _machine_load.LIMIT.others_cpus},
        "freed_memory": _freed_memory.kept(),
        # an op's batch in parts (_impl.batch_parts): on, and measured for this build and ISA
        "batch_parts": _batch_parts.summary(_lowering.LINKED, _lowering.HOST_ISA),
        "kernels": _kernels.summary(),
        "conversions": _casts.summary(),
        "faster_in_f32": _kernels.faster_in_f32_summary(),
        "support": _support(),
        # post-ops oneDNN fuses after each op (onednn_graph.post), probed now
        "fusion": {chain: _fusion.fusable(chain) for chain in _fusion.CHAINS},
    }


def report(caps: dict[str, Any], width: Optional[int] = None, everything: bool = False) -> str:
    """`capabilities()` as text for a person, each fact once: a summary (how each op runs
    per dtype, and per feature of the spec), or with `everything` each kernel's oneDNN
    implementation and oneDNN's own answer for each feature as written. Every line
    within `width` columns (a table too wide becomes a block per row, prose is wrapped),
    or None: a table row per line."""
    return "\n".join(_fit(line, width) for line in _report(caps, width, everything).split("\n"))


def _load_text(load: dict[str, Any]) -> str:
    """``capabilities()["load_aware"]`` in words."""
    if not load["enabled"]:
        return "new calls run on oneDNN's threads however busy (set_load_aware(False))"
    now = "all threads now" if not load["threads"] else f"{load['threads']} thread(s) now"
    return f"new calls run on the CPUs other processes leave ({now})"


def version_line() -> str:
    """The package's and oneDNN's versions and the ISA oneDNN runs (``--version``)."""
    v = _version.onednn_version()
    return (f"onednn-graph {_version.package_version()}, oneDNN {v.major}.{v.minor}.{v.patch} "
            f"({v.cpu_runtime}, {v.hash[:12]}), oneDNN ISA {_version.cpu_isa()}")


def _fit(line: str, width: Optional[int]) -> str:
    """`line` wrapped to `width`, its continuations indented 2 past its own indent."""
    if width is None or len(line) <= width:
        return line
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return "\n".join(textwrap.wrap(line, width, subsequent_indent=indent))


def _table(rows: Sequence[tuple[str, ...]], width: Optional[int]) -> list[str]:
    """Rows under a header as aligned columns, or, where that is wider than `width`, each
    row as a block: its first cell, then a "column: cell" line per other column (a row
    whose first cell is empty continues the block before it)."""
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ["  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  " + "  ".join("-" * w for w in widths))
    if width is None or max(len(line) for line in lines) <= width:
        return lines
    blocks = []
    for r in rows[1:]:
        if r[0]:
            blocks.append(f"  {r[0]}")
        blocks += [f"    {h}: {c}" for h, c in zip(rows[0][1:], r[1:]) if c]
    return blocks


def _report(caps: dict[str, Any], width: Optional[int], everything: bool) -> str:
    o = caps["onednn"]
    lines = [
        f"onednn-graph {caps['package']} (Python {caps['python']}, NumPy {caps['numpy']}, "
        f"ml_dtypes {caps['ml_dtypes']})",
        f"oneDNN {o['version']} ({o['cpu_runtime']}, {o['hash'][:12]}) on {caps['cpu']}: CPU ISA "
        f"{caps['cpu_isa']}, {caps['threads']} threads ({caps['threads_source']})",
        f"constant-tensor cache: {'on' if caps['constant_tensor_cache'] else 'off'}; "
        f"on a busy machine: {_load_text(caps['load_aware'])}",
        f"batches: {caps['batch_parts']['text']}",
    ]
    lines += _kernel_table(caps["cpu_isa"], caps["kernels"], width, everything)
    f = caps["faster_in_f32"]
    if f["applies"]:
        lines.append(f"bf16/f16 {f['text']} run as the f32 chain here even where oneDNN has a "
                     f"kernel of its own: oneDNN {f['onednn']}'s measured slower on {f['isa']}.")
    lines.append("\nConversions of an f32 chain (the package's where oneDNN's reorder is not jit):")
    for c in caps["conversions"]:
        by = f"the package ({c['package_path']})" if c["by"] == "package" else "oneDNN"
        lines.append(f"  {c['from']:>4} -> {c['to']:<4} {by}; oneDNN's reorder: {c['onednn_reorder']}")
    lines.append("\nPost-ops fused into one partition with the op (og.conv_transpose(..., "
                 "post_ops=...) and the backward-data ops; int8: with Dequantize and Quantize):")
    for chain, fusion in caps["fusion"].items():
        if not fusion["apart"]:
            said = f"all {len(fusion['fused'])}"
        elif not fusion["fused"]:
            said = "none: each runs as a partition of its own"
        else:
            said = f"{', '.join(fusion['fused'])}; apart: {', '.join(fusion['apart'])}"
        lines.append(f"  {chain}: {said}")
    support = caps["support"]
    if support is None:
        lines.append("support matrix: not available in this installation")
    else:
        lines += _support_matrix(support, width, everything)
    return "\n".join(lines)


def _kernel_table(isa: str, kernels: list[dict[str, str]], width: Optional[int],
                  everything: bool) -> list[str]:
    """Op x dtype: how the package runs it on this CPU, and with `everything` the
    kernel oneDNN has for it (its implementation), a row per op and dtype."""
    head = (f"\nHow each op runs on this CPU ({isa}), per dtype, for {_kernels.TYPICAL_TEXT} "
            "(native: oneDNN's own kernel for the dtype; f32 chain: the op in f32 between "
            "oneDNN TypeCasts, because the kernel is missing (none) or only the reference "
            "one" + ("):" if everything else "; --all names each kernel):"))

    def how(k: dict[str, str]) -> str:
        return "native" if k["runs"] == "native" else f"f32 chain ({k['kernel']})"

    if everything:
        rows = [("op", "dtype", "runs", "oneDNN's kernel")]
        for i, k in enumerate(kernels):
            first = i == 0 or kernels[i - 1]["op"] != k["op"]
            rows.append((k["op"] if first else "", k["dtype"], how(k),
                         k["implementation"] if k["kernel"] != "none" else "-"))
        return [head] + _table(rows, width)
    dtypes = list(dict.fromkeys(k["dtype"] for k in kernels))
    cells: dict[str, dict[str, str]] = {}
    for k in kernels:
        cells.setdefault(k["op"], {})[k["dtype"]] = how(k)
    return [head] + _table([("op", *dtypes)] + [(op, *(c.get(d, "-") for d in dtypes))
                                                  for op, c in cells.items()], width)


def _short(kind: str) -> str:
    """An op's initials (ConvTransposeBackwardData: CTBD), a column's heading."""
    return "".join(c for c in kind if c.isupper())


def _support_matrix(support: list[dict[str, Any]], width: Optional[int],
                    everything: bool) -> list[str]:
    """The support matrix: per feature and op, what the package does (native, or the
    rewrite it hands oneDNN, each rewrite spelled out once below the table) and, marked,
    where oneDNN refuses the op as written or computes other numbers; with
    `everything`, oneDNN's own answer too (its status), a row per op and feature."""
    rewrites: dict[str, str] = {}  # a rewrite's text -> its letter

    def package(s: dict[str, Any]) -> str:
        said = s["package"]
        if said.startswith("lowered (") and said.endswith(")"):
            text = said[len("lowered ("):-1]
            said = f"lowered {rewrites.setdefault(text, chr(ord('a') + len(rewrites)))}"
        return said

    def literal(s: dict[str, Any]) -> str:
        return str(s.get("literal", "native" if s["native"] else "no"))

    head = "\nThe spec's features on the linked oneDNN, as the package runs them"
    probed = "probed now, on small problems"
    ops = list(dict.fromkeys(s["op"] for s in support))
    if everything:
        lines = [f"{head} ({probed}), and what oneDNN does with each as the spec writes it:"]
        rows = [("op, feature", "oneDNN as written", "with the package")]
        for op in ops:
            rows.append((op, "", ""))
            rows += [("  " + s["feature"], literal(s), package(s))
                     for s in support if s["op"] == op]
        lines += _table(rows, width)
    else:
        marks = {"unsupported": "!", "wrong": "*"}

        def cell(s: Optional[dict[str, Any]]) -> str:
            if s is None:
                return "-"  # a feature the op does not have
            mark = next((m for word, m in marks.items() if literal(s).startswith(word)), "")
            return package(s) + mark

        by_feature: dict[str, dict[str, dict[str, Any]]] = {}
        for s in support:
            by_feature.setdefault(s["feature"], {})[s["op"]] = s
        names = ", ".join(f"{_short(op)} {op}" for op in ops)
        lines = [f"{head} ({probed}; {names}):"]
        # (rows made in reading order, so that the rewrites' letters follow it)
        lines += _table([("feature", *map(_short, ops))] + [
            (feature, *(cell(row.get(op)) for op in ops)) for feature, row in by_feature.items()],
            width)
        lines.append("  ! oneDNN refuses it as written, * oneDNN computes other numbers as "
                     "written (--all: its answers)")
    lines += [f"  {letter}: {text}" for text, letter in rewrites.items()]
    return lines
