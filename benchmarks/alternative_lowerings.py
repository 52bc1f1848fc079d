"""Each op that oneDNN 3.2 can compute in more than one way, timed both ways:
ConvTranspose (groups = 1, no bias) natively and as a ConvolutionBackwardData,
ConvTransposeBackwardData natively and as the forward Convolution it equals,
ConvTransposeBackwardWeights natively and as the ConvolutionBackwardWeights of
diff_dst and src, ConvolutionBackwardData (groups = 1) natively and as a
ConvTranspose (onednn_graph._lowering.alternatives). Prints per-configuration
medians of interleaved rounds, and whether both results lie within the
package's error bound of the NumPy reference (onednn_graph.tolerance).

    python benchmarks/alternative_lowerings.py [case,case,...]   # quiet machine, ~3 min

This is the measurement behind compile_op(..., tune=True): neither form wins
everywhere, so the package measures per problem.
"""

import sys
import time

import numpy as np

from onednn_graph import _attrs, _bench, _compiled, _lowering, reference, shapes, tolerance
from onednn_graph._dtypes import dtype_name

KINDS = {"ConvTranspose": reference.conv_transpose,
         "ConvTransposeBackwardData": reference.conv_transpose_backward_data,
         "ConvTransposeBackwardWeights": reference.conv_transpose_backward_weights,
         "ConvolutionBackwardData": reference.convolution_backward_data}


def compiled(p: _bench.Problem, native: _lowering.NativeOp) -> _compiled.CompiledOp:
    assert not native.crop, "the suite's cases need no crop"
    return _compiled.CompiledOp(native.kind, native.attrs, dtype_name(p.arrays[0].dtype),
                                [_compiled.meta(a) for a in p.arrays], _compiled.meta(p.out),
                                input_order=native.input_order)


def within_bound(p: _bench.Problem, got: np.ndarray, dtype: str, terms: int) -> bool:
    kwargs = dict(p.kwargs)
    shape = kwargs.pop(_attrs.SHAPE_ATTR.get(p.kind, ""), None)
    args = list(p.arrays) + ([shape] if shape is not None else [])
    return tolerance.compare(got, KINDS[p.kind], args, kwargs, dtype, terms).ok


def main() -> None:
    wanted = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else None
    print("| case | op | dtype | format | native ms | alternative ms | ratio | both within the bound |")
    print("|---|---|---|---|---|---|---|---|")
    for case in _bench.CASES:
        if wanted and case.name not in wanted:
            continue
        for kind in KINDS:
            for dtype in ("f32", "bf16"):
                for fmt in ("NCX", "NXC"):
                    p = _bench.problem(case, kind, dtype, fmt)
                    input_shapes = [a.shape for a in p.arrays]
                    plan = shapes.plan(kind, input_shapes, **p.kwargs)
                    native = _lowering.lower(plan, input_shapes)
                    others = _lowering.alternatives(plan, input_shapes, native)
                    if not others:
                        continue  # e.g. ConvolutionBackwardData with groups > 1
                    ops = [compiled(p, native), compiled(p, others[0])]
                    terms = tolerance.accumulation_terms(plan, input_shapes)
                    ok = True
                    for op in ops:
                        y = np.empty_like(p.out)
                        op.execute(list(p.arrays), y)
                        ok &= within_bound(p, y, dtype, terms)
                    run = [lambda n, op=op: _bench._timed(lambda: op.execute(list(p.arrays), p.out), n)
                           for op in ops]
                    n = max(1, int(0.05 / max(1e-6, run[0](2))))
                    samples: list[list[float]] = [[], []]
                    for _ in range(7):
                        for i in (0, 1):
                            time.sleep(0.01)
                            samples[i].append(run[i](n))
                    a, b = (float(np.median(s)) for s in samples)
                    print(f"| {case.name} | {_bench.SHORT[kind]} | {dtype} | {fmt} | {a * 1e3:.3f} | "
                          f"{b * 1e3:.3f} | {b / a:.2f} | {'yes' if ok else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
