"""A call's batch in parts: the op compiled for a few samples, run once per part.

Where oneDNN works through a copy of a tensor in another layout, a whole batch's copy
can outgrow the CPU's caches and make a trip through memory that the kernel's own
work does not pay for: oneDNN 3.2's AVX-512 kernels read and write NCX data as
16-channel blocks (``aBcd16b``), so a ConvTranspose on NCX arrays reorders its input
into blocks, writes its result in blocks and reorders that into the caller's array;
an f32 chain (``_impl.as_f32``) writes an f32 copy of its bf16/f16 input that the op
then reads. Compiled for a part of the batch whose copies fit, the same kernels run
once per part on views of the caller's arrays (the batch is the outer axis of every
data tensor): each copy is read back from the cache it was written to. The budget is
per thread that runs the call, so a call on a busy machine, which runs on fewer
threads (``_impl.machine_load``), runs in smaller parts: two processes of the package
on two cores then stop sharing the memory bandwidth of their whole batches' copies.

Every output sample depends on its own input sample only, so the parts compute what
the whole batch computes; not ConvTransposeBackwardWeights, which sums over the batch
(``registry.OpSpec.batched``): it never runs in parts. ``_core.DirectCall`` and
``_core.ChainCall`` run the parts in one native call.
"""

from __future__ import annotations

import math
import os
from typing import Any, Iterator, Sequence

from . import registry as _registry, version as _version


def rows_within(batch: int, sample_bytes: int, budget: int) -> int:
    """Samples per part: the most, dividing `batch`, whose `sample_bytes` each fit
    `budget` (at least 1), or 0 where the whole batch fits or has one sample."""
    if batch < 2 or batch * sample_bytes <= budget:
        return 0
    fits = max(1, budget // max(sample_bytes, 1))
    rows = max(r for r in range(1, min(fits, batch) + 1) if batch % r == 0)
    return rows if rows < batch else 0


def parted(kind: str) -> bool:
    """Whether op `kind` may run in parts: its result has the batch axis."""
    return kind in _registry.SPECS and _registry.OUTPUT in _registry.SPECS[kind].batched


def batched_positions(kind: str) -> tuple[int, ...]:
    """Op `kind`'s input positions whose first axis is the batch."""
    return tuple(j for j in _registry.SPECS[kind].batched if j != _registry.OUTPUT)


def split(kind: str, order: Sequence[int], rows: int, batch: int) -> tuple[int, tuple[int, ...]]:
    """(rows, batched) an op of `kind` (taking caller input ``order[j]`` as its input j)
    built for `rows` samples of a `batch` runs with: `rows` and the caller's input
    positions whose first axis is the batch, or (0, ()) (the batch at once) where
    `rows` does not divide a larger batch or the op may not run in parts."""
    if 0 < rows < batch and batch % rows == 0 and parted(kind):
        return rows, tuple(order[j] for j in batched_positions(kind))
    return 0, ()


def part_shape(shape: Sequence[int], rows: int) -> tuple[int, ...]:
    """A batched tensor's shape for a part of `rows` samples (0: the whole batch)."""
    return (rows,) + tuple(shape[1:]) if rows else tuple(shape)


def part_attrs(kind: str, attrs: dict[str, Any], rows: int) -> dict[str, Any]:
    """Op `kind`'s attributes for a part of `rows` samples (0: the whole batch): its
    shape attribute (the output's shape, batch first: ConvolutionBackwardData's
    ``dst_shape``) says so."""
    if not rows:  # any op (a MatMul is not in the registry)
        return attrs
    shape_attr = _registry.SPECS[kind].shape_attr
    if shape_attr not in attrs:
        return attrs
    return dict(attrs, **{shape_attr: [rows] + list(attrs[shape_attr][1:])})


def parts(rows: int, batched: Sequence[int], inputs: Sequence[Any], output: Any
          ) -> Iterator[tuple[list[Any], Any]]:
    """(inputs, output) of each part of `rows` samples: views of the arrays at
    positions `batched` and of `output`, the other inputs as they are (the Python
    path of what ``_core.DirectCall`` and ``_core.ChainCall`` run natively)."""
    for start in range(0, output.shape[0], rows):
        part = slice(start, start + rows)
        yield [a[part] if i in batched else a for i, a in enumerate(inputs)], output[part]


#: A chain runs its batch in parts where its op does fewer FLOPs than this per byte of
#: f32 data it reads and writes, and reads at least twice what it writes (below).
CHAIN_BELOW_FLOPS_PER_BYTE = 16


def chain_rows(kind: str, input_shapes: Sequence[Sequence[int]], output_shape: Sequence[int],
               flops: int) -> int:
    """Samples per part of the batch for an f32 chain of op `kind` (on inputs of
    `input_shapes`, in the op's order) doing `flops`, or 0: the batch at once.

    A chain writes an f32 copy of its input that the op then reads; where the op
    reads much more than it writes and computes little per byte (a depthwise
    backward-data op, say), that copy's trip through memory is most of the time. Run
    a part of the batch at a time, with parts whose f32 input fills half of one
    core's level-2 cache, the copy is read back from that cache instead. Measured on
    Sapphire Rapids capped at AVX2 (2 MiB L2, benchmarks/dtypes.py): depthwise
    ConvTransposeBackwardData 2.05 -> 1.61x the f32 time in NXC and 1.51 -> 1.35x in
    NCX; where the result is the larger tensor (ConvTranspose, ConvolutionBackwardData)
    parts were no faster, so they are not used there.
    """
    if not input_shapes or not parted(kind) or 0 not in _registry.SPECS[kind].batched:
        return 0
    batch = int(output_shape[0])
    data, result = math.prod(input_shapes[0]), math.prod(output_shape)
    if batch < 2 or data < 2 * result or flops >= CHAIN_BELOW_FLOPS_PER_BYTE * 4 * (data + result):
        return 0
    return rows_within(batch, 4 * data // batch, _version.l2_cache_bytes() // 2)


#: ``ONEDNN_GRAPH_BATCH_PARTS=0`` runs every op's batch at once (``op_rows``; an f32
#: chain's parts are its own: ``chain_rows``), read at import.
OP_PARTS_ENV = "ONEDNN_GRAPH_BATCH_PARTS"
OP_PARTS = os.environ.get(OP_PARTS_ENV, "").strip().lower() not in ("0", "off", "false", "no")
#: (oneDNN version, ISA) pairs where ``op_rows`` was measured: AMD Zen 4, natively and
#: capped at AVX2 (elsewhere an op runs its batch at once).
OP_PARTS_MEASURED: frozenset[tuple[tuple[int, int], str]] = frozenset({
    ((3, 2), "avx512_core_bf16"), ((3, 2), "avx2")})
#: The dtypes and data formats it was measured to pay for (``op_rows``).
OP_PARTS_DTYPES, OP_PARTS_FORMATS = ("f32",), ("NCX",)
#: A part's budget: this many level-2 caches per thread that runs the op ...
OP_L2_PER_THREAD = 2
#: ... for a batch whose data (batched input and result) is more than this many budgets ...
OP_FROM_BUDGETS = 3
#: ... where the op does fewer FLOPs than this per byte of that data, on one thread
#: (parts paid up to the 25 measured) and on more (grouped problems at 12 lost).
OP_BELOW_FLOPS_PER_BYTE = {1: 32, 2: 8}


def op_rows(kind: str, dtype: str, data_format: str, input_shapes: Sequence[Sequence[int]],
            output_shape: Sequence[int], flops: int, threads: int,
            version: tuple[int, int], isa: str) -> int:
    """Samples per part of the batch for op `kind` run by oneDNN `version` itself (not
    as a chain) on `isa`, on `threads` threads (0: all of oneDNN's), in `dtype` and
    `data_format` (inputs of `input_shapes` in the op's order), doing `flops`; or 0:
    the batch at once.

    Only f32 NCX, which oneDNN's kernels work through in blocks. Measured on AMD Zen 4
    (2 cores, 1 MiB level-2 cache each; ``python benchmarks/batch_parts.py``,
    docs/benchmarks/zen4-batch-parts.md): on one thread, what a busy machine leaves a
    process, the parts took 0.44-0.90x the whole batch's time on all 16 depthwise,
    grouped and few-channel configurations up to 25 FLOPs a byte (0.56-0.92x capped at
    AVX2); on two threads 0.46-0.51x (0.47-0.69x) on the depthwise ones of more than
    three budgets' data, where the suite's depthwise case (two and a half) and a 3-D one
    had taken 0.73-1.05x and 1.01-1.04x, and grouped ones (12 FLOPs a byte) 0.91-1.13x.
    NXC, read in place by more kernels, and bf16, with kernels of its own, ran
    0.70-1.30x: never in parts. No part may outgrow a budget, and oneDNN reorders an
    input that is not constant (the weights) on every execution, so once per part: the
    weights count in each part's budget."""
    if not OP_PARTS or (version, isa) not in OP_PARTS_MEASURED or dtype not in OP_PARTS_DTYPES \
            or data_format not in OP_PARTS_FORMATS or not input_shapes or not parted(kind) \
            or 0 not in _registry.SPECS[kind].batched:
        return 0
    batch = int(output_shape[0])
    item = 4 if dtype == "f32" else 2
    data = item * (math.prod(input_shapes[0]) + math.prod(output_shape))
    threads = threads or _version.onednn_threads()[0]
    if batch < 2 or flops >= OP_BELOW_FLOPS_PER_BYTE[min(threads, 2)] * data:
        return 0
    weights = item * sum(math.prod(s) for i, s in enumerate(input_shapes)
                         if i not in _registry.SPECS[kind].batched)
    budget = OP_L2_PER_THREAD * _version.l2_cache_bytes() * threads
    if data <= OP_FROM_BUDGETS * budget or data // batch + weights > budget:
        return 0  # the whole batch nearly fits, or not even one sample does
    return rows_within(batch, data // batch, budget - weights)


def summary(version: tuple[int, int], isa: str) -> dict[str, Any]:
    """Whether an op's batch may run in parts with oneDNN `version` on `isa` (``op_rows``):
    ``enabled`` (``ONEDNN_GRAPH_BATCH_PARTS``), ``measured`` (this build and ISA were)
    and ``text``, in words (``onednn-graph info``)."""
    measured = (version, isa) in OP_PARTS_MEASURED
    if not OP_PARTS:
        text = f"the batch at once ({OP_PARTS_ENV}=0)"
    elif not measured:
        text = f"the batch at once (parts not measured for oneDNN {version[0]}.{version[1]} on {isa})"
    else:
        text = (f"memory-bound {'/'.join(OP_PARTS_DTYPES)} {'/'.join(OP_PARTS_FORMATS)} calls in "
                "parts of the batch that fit the caches of their threads")
    return {"enabled": OP_PARTS, "measured": measured, "text": text}
