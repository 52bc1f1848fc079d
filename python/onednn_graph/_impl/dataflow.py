"""How a graph's ops hand tensors to one another: one description per tensor id,
which op writes each tensor, and whether ops read their own results through a cycle.

oneDNN 3.2 takes none of these as an error of its own: a file with one fails with
"could not finalize the graph", a graph built through the API fails the same way (a
tensor described twice) or finalizes and gives no partition, and the package's passes
over a graph (``kept_apart``) walk a cycle forever. So the JSON reader (``graph_json``)
and ``Graph.finalize`` ask here first and name the ops.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence


#: Where a tensor appears: (position of the op, "inputs" or "outputs", index there).
Place = tuple[int, str, int]


def described_twice(ops: Sequence[Any]) -> Optional[tuple[int, Place, tuple, Place, tuple]]:
    """The first tensor id that two places describe differently (dtype, shape, strides,
    layout) as (id, that place, its description, the first place, the first
    description), or None: one id is one tensor."""
    first: dict[int, tuple[Place, tuple]] = {}
    for i, op in enumerate(ops):
        for role, tensors in (("inputs", op.inputs), ("outputs", op.outputs)):
            for k, t in enumerate(tensors):
                described = (t.dtype, t.shape, t.strides, t.layout)
                where, before = first.setdefault(t.id, ((i, role, k), described))
                if before != described:
                    return t.id, (i, role, k), described, where, before
    return None


def description(d: tuple) -> str:
    """A tensor's description (``described_twice``) in words: "f32 of shape [1, 4]"."""
    dtype, shape, strides, layout = d
    return f"{dtype} of shape {None if shape is None else list(shape)}" + (
        f", strides {list(strides)}" if strides is not None else "") + (
        f", layout {layout}" if layout != "strided" else "")


def writers(ops: Sequence[Any]) -> tuple[dict[int, int], Optional[tuple[int, int, int]]]:
    """Tensor id -> position of the op that writes it, and the first tensor a second op
    writes as (tensor id, position of its first writer, position of the second), or None."""
    writer: dict[int, int] = {}
    for i, op in enumerate(ops):
        for t in op.outputs:
            if writer.setdefault(t.id, i) != i:
                return writer, (t.id, writer[t.id], i)
    return writer, None


def cycle(ops: Sequence[Any], writer: dict[int, int]) -> list[int]:
    """Positions of ops that form a cycle, each reading a tensor the one before it
    writes (`writer`: from ``writers``), starting from the one listed first; [] when
    there is none. An op that reads its own output is a cycle of one."""
    before = [sorted({writer[t.id] for t in op.inputs if t.id in writer}) for op in ops]
    after: list[list[int]] = [[] for _ in ops]
    for j, earlier in enumerate(before):
        for i in earlier:
            after[i].append(j)
    waiting = [len(earlier) for earlier in before]
    ready = [j for j, n in enumerate(waiting) if n == 0]
    while ready:  # Kahn's order: what remains is a cycle or downstream of one
        for j in after[ready.pop()]:
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.append(j)
    if not any(waiting):
        return []
    # every op left reads from another op left: walk back until one repeats
    path, at = [], next(j for j, n in enumerate(waiting) if n)
    while at not in path:
        path.append(at)
        at = next(i for i in before[at] if waiting[i])
    found = path[path.index(at):][::-1]
    first = found.index(min(found))
    return found[first:] + found[:first]


def described(ops: Sequence[Any], found: Sequence[int]) -> str:
    """A cycle (``cycle``) in words: "op 3 -> op 5 -> op 3 form a cycle: ...", or for
    an op that reads its own output, which tensor."""
    if len(found) == 1:
        op = ops[found[0]]
        read = {t.id for t in op.inputs}
        tensor = next(t.id for t in op.outputs if t.id in read)
        return (f"op {op.id} reads tensor {tensor} and writes it: an output id reuses an "
                "input id (give the output an id of its own)")
    chain = " -> ".join(f"op {ops[i].id}" for i in [*found, found[0]])
    return f"{chain} form a cycle: each reads a tensor the one before it writes"
