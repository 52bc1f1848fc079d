"""What the tests share: dtypes with their NumPy types, inputs, the reference check,
a fresh interpreter for code that may crash, and the cases several test modules use.

Tests import it as ``helpers`` (pytest puts tests/ on sys.path: pyproject's
``pythonpath``); fixtures live in conftest.py.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from onednn_graph import reference, shapes
from onednn_graph._impl import attrs as _attrs, registry as _registry
from onednn_graph._impl.plan import plan_call
from onednn_graph.tolerance import accumulation_terms, compare

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
#: The project's own JSON graphs, in oneDNN's format (tests/fixtures/README.md).
FIXTURES = Path(TESTS_DIR) / "fixtures"

NUMPY = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}


def random(rng, shape, dtype):
    """Values in [-1, 1), rounded to `dtype` (the reference sees the same inputs)."""
    return rng.uniform(-1, 1, size=shape).astype(NUMPY[dtype])


def assert_matches_reference(got, ref_fn, args, kwargs, dtype, terms):
    """oneDNN vs the float64 reference; the bound is derived in onednn_graph.tolerance."""
    result = compare(got, ref_fn, args, kwargs, dtype, terms)
    assert result.ok, str(result)


def assert_call_matches_reference(kind, arrays, kw, got, dtype):
    """`got`, op `kind`'s result on `arrays` with the functional API's keywords `kw`
    (its shape keyword included), against the op's reference with the op's bound."""
    cp = plan_call(kind, _registry.input_names(kind)[:len(arrays)], arrays, dict(kw))
    args, kwargs = list(arrays), dict(kw)
    shape_attr = _registry.SHAPE_ATTRS[kind]  # the legacy op's filter_shape too
    if shape_attr:
        args.append(kwargs.pop(shape_attr))
    assert_matches_reference(got, getattr(reference, _registry.function(kind)), tuple(args), kwargs,
                             dtype, accumulation_terms(cp.plan, cp.input_shapes))


# scripts/sanitize.sh preloads the ASan runtime; some bounds only hold without it.
UNDER_ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")

# With allocator_may_return_null=1 (scripts/sanitize.sh) ASan returns NULL for an
# impossible allocation, so NumPy raises MemoryError as it would without ASan, but
# ASan still prints this warning. It reports a request the tests make on purpose,
# not a memory error.
_ASAN_ALLOCATION_WARNING = re.compile(r"^==\d+==WARNING: AddressSanitizer failed to allocate .*$\n?", re.M)


def run_python(code, timeout=120):
    """Run `code` in a fresh interpreter (tests/ and its areas on sys.path, so that
    it can import helpers and test modules) and return its stdout.

    A crash (signal, abort, sanitizer report) there fails the calling test
    instead of killing the test run: the return code and stderr are checked.
    """
    areas = [str(p) for p in sorted(Path(TESTS_DIR).iterdir()) if p.is_dir() and p.name != "fixtures"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [TESTS_DIR] + areas + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=TESTS_DIR)
    assert proc.returncode == 0, (f"child exited with {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    stderr = _ASAN_ALLOCATION_WARNING.sub("", proc.stderr)
    assert "Sanitizer" not in stderr and "runtime error:" not in stderr, stderr[-3000:]
    return proc.stdout


# --- strided problems of the formulations on views (tests/api/test_polyphase_form.py,
# tests/api/test_subpixel_form.py) ------------------------------------------------

def strided_problem(rng, kind, fmt, wfmt, rank, geometry, groups=1, c=4, o=4, bias=False, batch=2,
                    spatial=(5, 4, 3)):
    """f32 arrays and keywords of a ConvTranspose or ConvolutionBackwardData of `geometry`
    (kernel, stride, pads_begin, pads_end, output_padding) on `spatial[:rank]` positions."""
    k, s, pb, pe, op = geometry
    x = spatial[:rank]
    y = tuple(s * (v - 1) + k - pb - pe + op for v in x)
    small = shapes.data_shape_for(fmt, batch, c, x)
    big = shapes.data_shape_for(fmt, batch, o, y)
    attrs = _attrs.normalize(kind, rank, weights_format=wfmt, groups=groups)
    transposed = kind == "ConvTranspose"
    w_shape = shapes.weights_shape_for(attrs, c, o, (k,) * rank) if transposed else \
        shapes.weights_shape_for(attrs, o, c, (k,) * rank)
    kw = dict(strides=s, pads_begin=pb, pads_end=pe, groups=groups, data_format=fmt, weights_format=wfmt)
    arrays = [random(rng, small, "f32"), random(rng, w_shape, "f32")]
    if transposed:
        if op:
            kw["output_padding"] = op
        if bias:
            arrays.append(random(rng, (o,), "f32"))
    else:
        kw["dst_shape"] = big
    return arrays, kw


def formed_call(kind, arrays, kw, way_of):
    """Run `kind` on `arrays` as the formulation ``way_of(plan, input_shapes, native)``
    gives (``_lowering.polyphase_way``, ``subpixel_way``, ...): (the prepared call, its
    result, NaN before it ran), or None where the formulation does not apply."""
    import dataclasses

    import numpy as np
    from onednn_graph._impl import call as _call

    cp = plan_call(kind, _registry.input_names(kind)[:len(arrays)], arrays, dict(kw))
    way = way_of(cp.plan, cp.input_shapes, cp.native)
    if way is None:
        return None
    prepared = _call.prepare(dataclasses.replace(cp, way=way), arrays)
    out = np.full(cp.result_shape, np.nan, np.float32)
    prepared.run(list(arrays), out)
    return prepared, out


def geometries_matching_reference(rng, kind, wfmt, fmt, rank, geometries, way_of, lowering, **problem):
    """How many of `geometries` (``strided_problem``'s) ran as ``way_of``'s formulation
    and matched the reference (``formed_matches_reference``); ConvolutionBackwardData
    skips those with an output_padding (its size comes from dst_shape)."""
    ran = 0
    for geometry in geometries:
        if kind == "ConvolutionBackwardData" and geometry[4]:
            continue
        arrays, kw = strided_problem(rng, kind, fmt, wfmt, rank, geometry, bias=kind == "ConvTranspose", **problem)
        ran += formed_matches_reference(kind, arrays, kw, way_of, lowering)
    return ran


def default_forms(rng, kind, fmt, isa, **problem):
    """The formulation (``_lowering.formed``: None for an op as it is) that the default
    rule (``_lowering.preferred``, oneDNN 3.2 on `isa`) gives `kind` in `fmt` with kernel 4,
    stride 2, pads 1 (``strided_problem``'s `problem`), per dtype: {f32, bf16, f16: form}."""
    from onednn_graph._impl import lowering as _lowering

    wfmt = _registry.SPECS[kind].weights_formats[0]
    arrays, kw = strided_problem(rng, kind, fmt, wfmt, 2, (4, 2, 1, 1, 0), **problem)
    cp = plan_call(kind, _registry.input_names(kind)[:len(arrays)], arrays, dict(kw))
    return {dtype: _lowering.formed(_lowering.preferred(cp.plan, cp.input_shapes, cp.native, dtype, isa=isa,
                                                        flops=cp.size.flops, version=(3, 2)))
            for dtype in ("f32", "bf16", "f16")}


#: (kind, weights format) of every strided formulation's ops: ConvTranspose and
#: ConvolutionBackwardData in each weights format they take.
FORMED_KINDS = [(k, f) for k in ("ConvTranspose", "ConvolutionBackwardData")
                for f in _registry.SPECS[k].weights_formats]


def formed_reproducer(kind, arrays, kw, way_of):
    """The reproducer of `kind` on `arrays` run as ``way_of``'s formulation: its native
    document (the ops handed to oneDNN), after checking that it replays exactly."""
    import onednn_graph as og
    from onednn_graph._tools import runner as _runner

    prepared, _ = formed_call(kind, arrays, kw, way_of)
    doc = og.reproducer.reproducer(prepared.op).native
    assert _runner.run(og.load_graph(doc), exact=True).passed
    return doc


def formed_matches_reference(kind, arrays, kw, way_of, lowering):
    """Whether the formulation ``way_of`` gives applies to `kind` on `arrays` (``formed_call``);
    where it does, the call ran as it (its lowering starts with `lowering`) and its result
    is the reference's."""
    ran_as = formed_call(kind, arrays, kw, way_of)
    if ran_as is None:
        return False
    prepared, out = ran_as
    assert prepared.op.lowering.startswith(lowering)
    assert_call_matches_reference(kind, arrays, kw, out, "f32")
    return True


# --- cases of the reference's adjoint identities (tests/unit/test_reference.py,
# tests/api/test_adjoint.py) ---------------------------------------------------

def ct_case(rng, nsp, g, c_in, c_out, x, k, s, d, pb, pe, auto_pad, fmt, wfmt):
    kw = dict(strides=s, dilations=d, pads_begin=pb, pads_end=pe, auto_pad=auto_pad,
              groups=g, data_format=fmt, weights_format=wfmt)
    a = _attrs.normalize("ConvTranspose", nsp, **kw)
    src = rng.standard_normal(shapes.data_shape_for(fmt, 2, c_in, x))
    w = rng.standard_normal(shapes.weights_shape_for(a, c_in, c_out, k))
    return src, w, kw


# (nsp, g, c_in, c_out, X, K, s, d, pads_begin, pads_end, output_padding, auto_pad)
ADJOINT_CASES = [
    (1, 1, 1, 1, (5,), (3,), (2,), (1,), (0,), (0,), (1,), "none"),
    (1, 2, 4, 6, (4,), (3,), (3,), (2,), (2,), (1,), (2,), "none"),
    (1, 3, 3, 3, (6,), (2,), (1,), (2,), (0,), (1,), (0,), "same_upper"),  # depthwise
    (1, 3, 6, 9, (3,), (4,), (2,), (1,), (0,), (0,), (1,), "same_lower"),
    (1, 1, 2, 2, (4,), (3,), (2,), (1,), (1,), (1,), (3,), "none"),  # output_padding > stride
    (2, 1, 2, 3, (3, 4), (2, 3), (2, 1), (1, 2), (1, 0), (0, 2), (1, 0), "none"),
    (2, 2, 2, 2, (5, 3), (3, 3), (3, 2), (2, 1), (0, 0), (0, 0), (2, 1), "valid"),  # depthwise
    (2, 2, 4, 2, (3, 3), (3, 2), (2, 3), (1, 1), (0, 0), (0, 0), (1, 2), "same_upper"),
    (2, 3, 6, 3, (4, 2), (2, 2), (1, 2), (2, 1), (0, 0), (0, 0), (0, 0), "same_lower"),
    (3, 1, 2, 2, (3, 2, 2), (2, 2, 1), (2, 1, 3), (1, 2, 1), (1, 0, 0), (0, 1, 0), (1, 0, 2), "none"),
    (3, 2, 2, 4, (2, 3, 2), (2, 1, 2), (1, 2, 2), (2, 1, 1), (0, 0, 0), (0, 0, 0), (0, 0, 0), "same_upper"),
    (3, 2, 2, 2, (2, 2, 3), (1, 2, 2), (3, 1, 2), (1, 1, 2), (0, 0, 0), (0, 0, 0), (0, 0, 1), "valid"),
]


# --- PyTorch as a second reference, where installed -------------------------------

def import_torch():
    """torch, or skip. Like pytest.importorskip, but a broken install (ImportError
    other than ModuleNotFoundError) also skips instead of tripping pytest's
    deprecation warning, which filterwarnings=error would turn into a failure."""
    try:
        import torch
    except ImportError as exc:
        pytest.skip(f"torch is not importable: {exc}")
    return torch


TORCH_CASES = [
    # (nsp, g, c_in, c_out, X, K, s, d, pads_begin, pads_end, output_padding)
    (1, 1, 2, 3, (5,), (3,), (2,), (1,), (1,), (0,), (1,)),
    (1, 3, 3, 6, (4,), (2,), (3,), (2,), (0,), (2,), (2,)),  # depthwise-like: 1 in channel per group
    (2, 2, 4, 2, (3, 4), (3, 2), (2, 1), (1, 2), (1, 1), (2, 0), (0, 0)),
    (2, 1, 1, 2, (4, 3), (2, 3), (3, 2), (2, 1), (0, 2), (1, 1), (1, 1)),
    (3, 2, 2, 4, (2, 3, 2), (2, 2, 1), (2, 1, 3), (1, 2, 1), (1, 0, 0), (0, 1, 0), (1, 0, 2)),
    (1, 1, 2, 3, (4,), (3,), (2,), (1,), (0,), (1,), (3,)),  # output_padding > stride
]


def torch_gradient_references(torch, conv_transpose, x_shape, w_shape, **kw):
    """The input's and the weight's gradients of ``conv_transpose(x, w, **kw)`` (PyTorch's
    functional ConvTranspose) by PyTorch's autograd in float64, as functions of (the
    result's gradient, the weight) and (the input, the result's gradient)."""
    def grad_input(g, w):
        x64 = torch.zeros(x_shape, dtype=torch.float64, requires_grad=True)
        with torch.enable_grad():
            return torch.autograd.grad(conv_transpose(x64, w, **kw), x64, g)[0]

    def grad_weight(x, g):
        w64 = torch.zeros(w_shape, dtype=torch.float64, requires_grad=True)
        with torch.enable_grad():
            return torch.autograd.grad(conv_transpose(x, w64, **kw), w64, g)[0]

    return grad_input, grad_weight


def torch_pad_arg(begin, end):
    # F.pad takes (last-axis begin, last-axis end, previous axis, ...);
    # negative values crop
    return [v for b, e in zip(reversed(begin), reversed(end)) for v in (b, e)]


def torch_ops(torch, nsp, s, d, pb, pe, op, g):
    """PyTorch's ConvTranspose and Convolution with the spec's pads: the unpadded
    result cropped (or extended by output_padding) with F.pad, which any pads allow."""
    F = torch.nn.functional
    ct = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nsp]
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nsp]

    def conv_transpose(x, w, b=None):
        full = ct(x, w, stride=s, dilation=d, groups=g)
        y = F.pad(full, torch_pad_arg([-v for v in pb], [o - e for o, e in zip(op, pe)]))
        return y if b is None else y + b.reshape(1, -1, *([1] * nsp))

    def convolution(x, w):
        return conv(F.pad(x, torch_pad_arg(pb, pe)), w, stride=s, dilation=d, groups=g)

    return conv_transpose, convolution
