"""The package's own conversions between f32 and bf16 / f16 (``_core.cast``,
cpp/cast_kernels.hpp), which replace oneDNN's scalar ``simple:any`` TypeCast in an
f32 chain (``_impl.casts``).

Truth: ml_dtypes (bf16) and NumPy's ``astype`` (f16), bit for bit: the upcasts over
every 16-bit pattern, the downcasts over f32 patterns built to hit every rounding
case of both targets (ties to even both ways at every position a normal or
subnormal result rounds at, the carry into the next binade and into infinity,
NaNs with payloads in every part of the mantissa, infinities, zeros, subnormals),
on every code path this CPU can run, the forced portable one included. No
tolerance: a conversion is exact or one IEEE rounding, so any difference is a bug.
"""

import ml_dtypes
import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import _core
from onednn_graph._impl import casts as _casts, compiled as _compiled
from helpers import run_python

BF16 = np.dtype(ml_dtypes.bfloat16)
LOW = {"bf16": BF16, "f16": np.dtype(np.float16)}
PATHS = _core.cast_paths()


def _f32_patterns(rng) -> np.ndarray:
    """f32 bit patterns: every exponent and sign, times mantissas that put a tie, a
    value just above and just below it, at each of the 23 positions a result can
    round at, under low bits all clear and all set (the carry), plus random ones."""
    mantissas = {0, 0x7fffff, 0x400000, 0x000001, 0x200000 | 1}
    for t in range(24):
        tie = 1 << t
        for base in (0, tie << 1, 0x7fffff & ~((tie << 1) - 1)):  # lsb clear, lsb set, all ones above
            for m in (tie - 1, tie, tie + 1):
                mantissas.add((base | m) & 0x7fffff)
    mantissas.update(int(m) for m in rng.integers(0, 1 << 23, 300))
    m = np.array(sorted(mantissas), np.uint32)
    e = np.arange(256, dtype=np.uint32) << 23
    patterns = (e[:, None] | m[None, :]).ravel()
    return np.concatenate([patterns, patterns | 0x80000000]).view(np.float32)


@pytest.fixture(scope="module")
def f32_patterns():
    return _f32_patterns(np.random.default_rng(20261125))


def _bits(a):
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint16)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", LOW)
def test_upcasts_are_exact_on_every_16_bit_pattern(path, dtype):
    src = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(LOW[dtype])
    got = np.empty(src.shape, np.float32)
    _core.cast(src, got, path=path)
    with np.errstate(invalid="ignore"):
        want = src.astype(np.float32)
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", LOW)
def test_downcasts_round_to_nearest_even_as_ml_dtypes_and_numpy(path, dtype, f32_patterns):
    got = np.empty(f32_patterns.shape, LOW[dtype])
    _core.cast(f32_patterns, got, path=path)
    with np.errstate(invalid="ignore", over="ignore"):
        want = f32_patterns.astype(LOW[dtype])
    bad = np.flatnonzero(_bits(got) != _bits(want))
    assert bad.size == 0, [(hex(_bits(f32_patterns)[i]), hex(_bits(got)[i]), hex(_bits(want)[i]))
                           for i in bad[:8]]


# Values a reader can check by hand: (f32 bits, bf16 bits, f16 bits).
NAMED = [
    (0x3f808000, 0x3f80, 0x3c04),  # 1 + 2**-8: a bf16 tie, lsb clear -> down
    (0x3f818000, 0x3f82, 0x3c0c),  # 1 + 3 * 2**-8: a bf16 tie, lsb set -> up
    (0x7f7fffff, 0x7f80, 0x7c00),  # the largest f32: bf16 and f16 overflow to inf
    (0x477fefff, 0x4780, 0x7bff),  # just below 65520: f16's largest finite, 65504
    (0x477ff000, 0x4780, 0x7c00),  # 65520, the f16 tie above 65504: to even, inf
    (0x33000000, 0x3300, 0x0000),  # 2**-25: half f16's smallest subnormal, a tie -> 0
    (0x33000001, 0x3300, 0x0001),  # just above it -> the smallest subnormal
    (0x00010000, 0x0001, 0x0000),  # bf16's smallest subnormal: kept, not flushed
    (0x80000000, 0x8000, 0x8000),  # -0 stays -0
    (0x7f800000, 0x7f80, 0x7c00),  # inf
    (0x7f800001, 0x7fc0, 0x7c01),  # a signalling NaN whose payload f16 cannot hold: still a NaN
    (0xffa00000, 0xffc0, 0xfd00),  # a NaN's sign and (for f16) its top payload bits
]


@pytest.mark.parametrize("path", PATHS)
def test_named_values(path):
    f = np.array([n[0] for n in NAMED], np.uint32).view(np.float32)
    for column, dtype in ((1, "bf16"), (2, "f16")):
        got = np.empty(f.shape, LOW[dtype])
        _core.cast(f, got, path=path)
        assert [hex(b) for b in _bits(got)] == [hex(n[column]) for n in NAMED], dtype


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("layout", ["channels-last", "sliced", "reversed", "fortran", "broadcast"])
def test_arrays_are_read_and_written_where_they_lie(rng, dtype, layout):
    """Any strides on either side, and large enough (2**17 elements) to be split
    between threads; the result equals astype of the same view."""
    base = rng.standard_normal((4, 32, 32, 48)).astype(np.float32)
    views = {
        "channels-last": lambda a: a.transpose(0, 3, 1, 2),  # NCHW view of NHWC memory
        "sliced": lambda a: a[:, ::2, 1:, ::3],
        "reversed": lambda a: a[::-1, :, ::-1],
        "fortran": lambda a: np.asfortranarray(a),
        "broadcast": lambda a: np.broadcast_to(a[:1], a.shape),  # a read-only source only
    }
    src = views[layout](base)
    low = np.empty(src.shape, LOW[dtype])
    dst = views[layout](np.empty(base.shape, LOW[dtype])) if layout != "broadcast" else low
    _core.cast(src, dst)
    np.testing.assert_array_equal(_bits(dst), _bits(src.astype(LOW[dtype])))
    back = views[layout](np.empty(base.shape, np.float32)) if layout != "broadcast" else \
        np.empty(src.shape, np.float32)
    _core.cast(dst, back, threads=1)
    np.testing.assert_array_equal(back, dst.astype(np.float32))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("blocks", [(2, 2), (3, 4), (1, 16), (16, 16), (2, 600)])
def test_depth_to_space_copies_and_converts_where_it_lies(rng, path, dtype, blocks):
    """f32 -> f32 is a plain copy on the same walk (the kernel == stride MatMul's
    rearrangement, _impl/matmul_form.py), and a destination that is dense over two
    axes the source interleaves (NCX depth-to-space: (kernel, x) -> (x, kernel)) is
    gathered a row at a time (CastJob::tile); both big enough to be threaded,
    kernels beyond the gather buffer (600) on the plain walk. Truth: NumPy's copy and
    astype of the same view, bit for bit."""
    kh, kw = blocks
    z = rng.standard_normal((2, kh, kw, 3, 40 // kh + 1, 64)).astype(np.float32)
    src = z.transpose(0, 3, 4, 1, 5, 2)  # (N, O, H, kh, W, kw) of dense (N, kh, kw, O, H, W)
    target = np.float32 if dtype == "f32" else LOW[dtype]
    dst = np.empty(src.shape, target)
    _core.cast(src, dst, path=path)
    np.testing.assert_array_equal(_bits(dst) if dtype != "f32" else dst,
                                  _bits(src.astype(target)) if dtype != "f32" else src)
    if dtype != "f32":  # and back: the source dense, the destination interleaved
        back = np.empty(z.shape, np.float32).transpose(0, 3, 4, 1, 5, 2)
        _core.cast(dst, back, path=path)
        np.testing.assert_array_equal(back, dst.astype(np.float32))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("layout", ["NCX", "NXC"])
@pytest.mark.parametrize("channels,strides", [(3, (2, 2)), (1, (4,)), (2, (2, 2, 2)), (20, (2, 2))])
def test_phases_into_place(rng, path, dtype, layout, channels, strides):
    """The sub-pixel formulation's copy (_impl/subpixel_form.py): a dense (N, Q..., s...,
    O) result into each phase's place of an NCX or NXC output, where the destination's
    rows are strided or a few elements long in the source (gathered as tiles, CastJob::tile;
    20 channels: rows too long for that, on the plain walk); big enough to be threaded.
    Truth: NumPy's copy and astype of the same view, bit for bit."""
    rank, n, q = len(strides), 3, {1: 300, 2: 24, 3: 8}[len(strides)]
    result = rng.standard_normal((n,) + (q,) * rank + strides + (channels,)).astype(np.float32)
    # (N, Q0, Q1, s0, s1, O) -> (N, Q0, s0, Q1, s1, O): each phase beside its position
    order = [0] + [a for i in range(rank) for a in (1 + i, 1 + rank + i)] + [1 + 2 * rank]
    src = result.transpose(order)
    target = np.float32 if dtype == "f32" else LOW[dtype]
    big = (n,) + tuple(q * s for s in strides) + (channels,)
    out = np.empty(big if layout == "NXC" else (n, channels) + big[1:-1], target)
    channels_last = out if layout == "NXC" else np.moveaxis(out, 1, -1)
    dst = channels_last.reshape(src.shape)  # a view: splitting axes keeps the memory
    assert np.shares_memory(dst, out)
    _core.cast(src, dst, path=path)
    want = src.astype(target).reshape(big)
    got = channels_last
    np.testing.assert_array_equal(_bits(got) if dtype != "f32" else got,
                                  _bits(want) if dtype != "f32" else want)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("shape", [(2, 16, 4, 4), (3, 17, 5, 7), (2, 33, 19, 21), (32, 256, 14, 14),
                                   (1, 40, 3, 5, 7), (4, 300, 1, 1)])
def test_ncx_nxc_transposes_copy_every_bit(rng, path, shape):
    """f32 between NCX and NXC memory (the torch layer's channels-last copies,
    python/onednn_graph/torch/_via_nxc.py) swaps the walk's last two axes: copied in
    square blocks (CastJob::transpose; AVX-512 transposes whole 16 x 16 blocks in
    registers, AVX2 their 8 x 8 quarters), with edge blocks where 16 divides neither
    extent, both ways, 2-D and 3-D, from one block to a Mask R-CNN head's input
    (threaded), and the plain walk where a swapped axis is shorter than a block. The data
    are arbitrary f32 bit patterns, NaN payloads and signalling NaNs among them (a copy
    moves bits, never values). Truth: NumPy's transposing copy, bit for bit."""
    ncx = rng.integers(0, 1 << 32, shape, dtype=np.uint32).view(np.float32)
    to_nxc = tuple([0] + list(range(2, len(shape))) + [1])
    nxc = np.empty(tuple(shape[a] for a in to_nxc), np.float32)
    _core.cast(ncx, nxc.transpose(np.argsort(to_nxc)), path=path)
    np.testing.assert_array_equal(_bits(nxc), _bits(np.ascontiguousarray(ncx.transpose(to_nxc))))
    back = np.empty(shape, np.float32)
    _core.cast(nxc.transpose(np.argsort(to_nxc)), back, path=path)
    np.testing.assert_array_equal(_bits(back), _bits(ncx))
    # into a strided destination (every other row of a larger array), on one thread
    wide = np.zeros(shape[:-1] + (2 * shape[-1],), np.float32)
    _core.cast(nxc.transpose(np.argsort(to_nxc)), wide[..., ::2], 1, path=path)
    np.testing.assert_array_equal(_bits(wide[..., ::2]), _bits(ncx))
    assert not wide[..., 1::2].any()


@pytest.mark.parametrize("shape", [(0,), (3, 0, 2), (), (1,), (17,), (1, 1, 33)])
def test_empty_scalar_and_odd_sized_arrays(rng, shape):
    src = rng.standard_normal(shape).astype(np.float32)
    dst = np.empty(shape, BF16)
    _core.cast(src, dst)
    np.testing.assert_array_equal(_bits(dst), _bits(src.astype(BF16)))


def test_bad_arguments_are_refused_before_anything_is_written(rng):
    src = rng.standard_normal((4, 5)).astype(np.float32)
    dst = np.zeros((4, 5), BF16)
    with pytest.raises(ValueError, match="shapes differ"):
        _core.cast(src, np.zeros((5, 4), BF16))
    with pytest.raises(ValueError, match="f32 to float64"):
        _core.cast(src, np.zeros((4, 5), np.float64))
    with pytest.raises(ValueError, match="not bf16 to f16"):
        _core.cast(dst, np.zeros((4, 5), np.float16))
    read_only = np.zeros((4, 5), BF16)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        _core.cast(src, read_only)
    shared = np.zeros(40, np.uint16)
    with pytest.raises(ValueError, match="share memory"):
        _core.cast(shared[:40].view(np.float32).reshape(4, 5), shared[20:].view(BF16).reshape(4, 5))
    with pytest.raises(TypeError, match="ndarray"):
        _core.cast(src.tolist(), dst)
    with pytest.raises(ValueError, match="path must be"):
        _core.cast(src, dst, path="neon")
    with pytest.raises(ValueError, match="threads"):
        _core.cast(src, dst, threads=-1)
    assert not dst.any() and not read_only.any()


def test_the_path_follows_onednn_s_isa():
    """The package's dispatch honours ONEDNN_MAX_CPU_ISA as oneDNN does: AVX-512 code
    only where oneDNN dispatches to AVX-512, AVX2 code from AVX2, else portable."""
    isa = og.system.cpu_isa()
    expected = "avx512" if isa.startswith("avx512") else "avx2" if isa.startswith("avx2") else "portable"
    assert _core.cast_path() == expected
    assert _core.cast_path() in PATHS and "portable" in PATHS


@pytest.mark.parametrize("cap, path", [("SSE41", "portable"), ("AVX2", "avx2")])
def test_a_lower_isa_cap_lowers_the_path(monkeypatch, cap, path):
    if path not in PATHS:
        pytest.skip(f"this CPU has no {path} code path")
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", cap)
    code = "from onednn_graph import _core; print(_core.cpu_isa(), _core.cast_path())"
    assert run_python(code).split() == [cap.lower(), path]


def _typecast(source, target, x):
    """x converted by oneDNN's own TypeCast (a one-op partition)."""
    a = _core.LogicalTensor(0, source, list(x.shape))
    b = _core.LogicalTensor(1, target, list(x.shape))
    g = _core.Graph("cpu")
    g.add_op(_core.Op(0, "TypeCast", [a], [b], {}, "TypeCast"))
    g.finalize()
    [p] = g.get_partitions()
    out = np.empty(x.shape, np.float32 if target == "f32" else LOW[target])
    p.compile([a], [b], _compiled.engine()).execute_arrays(_compiled.stream(), [x], [out])
    return out


def test_where_onednn_s_typecast_differs_the_package_is_ieee():
    """oneDNN 3.2's TypeCast flushes bf16 subnormal results to zero in its
    ``simple:any`` reorder (below AVX-512) and in its ``jit:uni`` one where that uses
    the AVX512-BF16 instruction (from ``avx512_core_bf16``; on ``avx512_core`` it keeps
    them), its ``simple:any`` turns -0 into +0, and both quiet a signalling NaN; the
    package's conversion keeps all three, as ml_dtypes and NumPy do
    (docs/semantics.md). Pinned: a oneDNN that changes this fails here."""
    x = np.array([0x00010000, 0x80018000, 0x80000000], np.uint32).view(np.float32)
    ours = np.empty(x.shape, BF16)
    _core.cast(x, ours)
    assert [hex(b) for b in _bits(ours)] == ["0x1", "0x8002", "0x8000"]
    theirs = _bits(_typecast("f32", "bf16", x))
    reorder = _casts.converter(_core.LogicalTensor(0, "f32", [3]),
                               _core.LogicalTensor(1, "bf16", [3])).reorder
    emulated = (reorder.startswith("jit")
                and og.system.cpu_isa() in ("avx512_core", "avx512_core_vnni"))
    if emulated:
        assert [hex(b) for b in theirs] == ["0x1", "0x8002", "0x8000"]
    else:
        assert theirs[0] == 0 and theirs[1] in (0, 0x8000)  # subnormals flushed
    if reorder == "simple:any":
        assert theirs[2] == 0  # -0 -> +0
    snan = np.array([0x7c01], np.uint16).view(np.float16)
    assert _bits(_typecast("f16", "f32", snan))[0] == 0x7fc02000  # quieted
    ours32 = np.empty(1, np.float32)
    _core.cast(snan, ours32)
    assert _bits(ours32)[0] == 0x7f802000  # as NumPy: still signalling


def test_the_choice_is_asked_of_onednn_s_reorder():
    """A jit reorder stays oneDNN's for tensors of SMALL_ELEMENTS or more; any other,
    and any smaller tensor, the package converts. Truth: oneDNN's own answer for each
    pair (_core.reorder_impl)."""
    for rows in (1, 256):
        n = _casts.SMALL_ELEMENTS // 256 * rows  # below, then at the threshold
        for source, target in (("bf16", "f32"), ("f32", "bf16"), ("f16", "f32"), ("f32", "f16")):
            reorder = _core.reorder_impl(source, target, [n], [1], [1])
            c = _casts.converter(_core.LogicalTensor(0, source, [n]), _core.LogicalTensor(1, target, [n]))
            assert c.reorder == reorder
            assert c.by_package == (not reorder.startswith("jit") or n < _casts.SMALL_ELEMENTS)
    for row in _casts.summary():  # of a tensor at least SMALL_ELEMENTS long
        assert row["by"] == ("oneDNN" if row["onednn_reorder"].startswith("jit") else "package")
        assert row["package_path"] == _core.cast_path()
