"""How a graph's ops hand tensors to one another: which op writes each tensor, and
whether ops read their own results through a cycle.

oneDNN 3.2 takes neither a tensor written twice nor a cycle as an error of its own:
a file with one fails with "could not finalize the graph", a graph built through the
API finalizes and gives no partition, and the package's passes over a graph
(``kept_apart``) walk a cycle forever. So the JSON reader (``graph_json``) and
``Graph.finalize`` ask here first and name the ops.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence


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
    """A cycle (``cycle``) in words: "op 3 -> op 5 -> op 3 form a cycle: ..."."""
    if len(found) == 1:
        return f"op {ops[found[0]].id} reads a tensor it writes itself"
    chain = " -> ".join(f"op {ops[i].id}" for i in [*found, found[0]])
    return f"{chain} form a cycle: each reads a tensor the one before it writes"
