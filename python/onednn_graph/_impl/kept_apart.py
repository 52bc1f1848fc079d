"""Values oneDNN would fuse wrongly, kept out of its fused partitions.

oneDNN 3.2 and 3.13 fuse ``Dequantize(skip) -> Add`` after an int8 convolution-family op
as a "sum" post-op that accumulates into the destination, reading the skip in the
destination's dtype. Where the chain ends in a Quantize to another dtype than the
skip's (a u8 skip into an s8 result, or s8 into u8) the result is wrong: off by up to
77 when measured (tests/native/test_library_gaps.py holds oneDNN to it). Marking the
dequantized skip as an output of the graph (oneDNN's End op) keeps its Dequantize out
of the fused partition: the Add then reads it as f32, one more pass over the skip.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence


def sum_operands(ops: Sequence[Any]) -> list[Any]:
    """The logical tensors of `ops` (spec-level Ops) to keep apart: each Dequantize result
    an Add reads whose chain (through single-consumer ops) ends in a Quantize to
    another dtype than the Dequantize's input."""
    consumers: dict[int, list[Any]] = {}
    for op in ops:
        for t in op.inputs:
            consumers.setdefault(t.id, []).append(op)

    def quantize_after(op: Any) -> Optional[Any]:
        while len(after := consumers.get(op.outputs[0].id, [])) == 1:
            op = after[0]
            if op.kind == "Quantize":
                return op
        return None

    return [op.outputs[0] for op in ops if op.kind == "Dequantize" and any(
        add.kind == "Add" and (q := quantize_after(add)) is not None
        and q.outputs[0].dtype != op.inputs[0].dtype for add in consumers.get(op.outputs[0].id, []))]
