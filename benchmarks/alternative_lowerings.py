"""ConvTransposeBackwardData two ways on oneDNN 3.2: natively, and as the forward
Convolution it equals (same weights, strides, pads and dilations; the package
already lowers it so when dilations > 1). Prints per-configuration medians of
interleaved rounds, and whether both results lie within the package's error
bound of the NumPy reference (onednn_graph.tolerance).

    python benchmarks/alternative_lowerings.py      # on a quiet machine, ~1 min

This is the measurement behind the choice of a lowering per problem (see
docs/benchmarks.md); neither form wins everywhere.
"""

import time

import numpy as np

from onednn_graph import _bench, _compiled, _lowering, reference, shapes, tolerance
from onednn_graph._dtypes import dtype_name

KIND = "ConvTransposeBackwardData"


def compiled(p: _bench.Problem, as_convolution: bool) -> _compiled.CompiledOp:
    plan = shapes.plan(p.kind, [a.shape for a in p.arrays], **p.kwargs)
    if as_convolution:
        a = plan.attrs
        pads_end = tuple(pe - op for pe, op in zip(plan.pads_end, a.output_padding))
        native = _lowering.NativeOp("Convolution", _lowering._explicit(
            plan, pads_end, weights_format=_lowering.TRANSPOSE_AS_CONV_FORMAT[a.weights_format]),
            "Convolution over the same weights")
    else:
        native = _lowering.lower(plan, [a.shape for a in p.arrays])
    return _compiled.CompiledOp(native.kind, native.attrs, dtype_name(p.arrays[0].dtype),
                                [_compiled.meta(a) for a in p.arrays], _compiled.meta(p.out))


def main() -> None:
    print("| case | dtype | format | native ms | as Convolution ms | ratio | both within the bound |")
    print("|---|---|---|---|---|---|---|")
    for case in _bench.CASES:
        for dtype in ("f32", "bf16"):
            for fmt in ("NCX", "NXC"):
                p = _bench.problem(case, KIND, dtype, fmt)
                ops = [compiled(p, False), compiled(p, True)]
                plan = shapes.plan(p.kind, [a.shape for a in p.arrays], **p.kwargs)
                terms = tolerance.accumulation_terms(plan, [a.shape for a in p.arrays])
                agree = True
                for op in ops:
                    y = np.empty_like(p.out)
                    op.execute(list(p.arrays), y)
                    agree &= tolerance.compare(y, reference.conv_transpose_backward_data, p.arrays,
                                               p.kwargs, dtype, terms).ok
                run = [lambda n, op=op: _bench._timed(lambda: op.execute(list(p.arrays), p.out), n) for op in ops]
                n = max(1, int(0.05 / max(1e-6, run[0](2))))
                samples: list[list[float]] = [[], []]
                for _ in range(7):
                    for i in (0, 1):
                        time.sleep(0.01)
                        samples[i].append(run[i](n))
                a, b = (float(np.median(s)) for s in samples)
                print(f"| {case.name} | {dtype} | {fmt} | {a * 1e3:.3f} | {b * 1e3:.3f} | {b / a:.2f} | "
                      f"{'yes' if agree else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
