"""The op registry (_impl/registry.py) against what the package does with each entry.

Contracts, for every entry: the functional API and the reference spell the op the
same way (name, inputs, keywords, defaults); the entry's inputs and shape
attribute are those functions' arguments; its weights formats are what the
attribute checks accept; its tensors (the primitive's, the equivalent
ConvTranspose's) point at real tensors of a planned problem; the kernel probe
answers for it. Adding an op to the registry runs it through all of these.
"""

import inspect

import pytest

from onednn_graph import ops, reference, shapes
from onednn_graph._impl import attrs as _attrs, kernels, lowering, plan as _plan, registry
from onednn_graph.tolerance import accumulation_terms

ALL = list(registry.SPECS)
SPEC_OPS = list(registry.KINDS)
FUNCTIONAL = SPEC_OPS + [registry.LEGACY.kind]

# A small problem of each op, as (input shapes, keywords), NCX data: the first three
# are one ConvTranspose (4 -> 6 channels in 2 groups, 5 -> 10 positions), the last
# three one convolution (3 -> 4 channels, 10 -> 5 positions).
_X, _Y, _W = (2, 4, 5), (2, 6, 10), (4, 3, 2)
_CT = dict(strides=2, groups=2, weights_format="IOX", data_format="NCX")
_CONV = dict(strides=2, weights_format="OIX", data_format="NCX")
PROBLEMS = {
    "ConvTranspose": ([_X, _W, (6,)], _CT),
    "ConvTransposeBackwardData": ([_Y, _W], _CT),
    "ConvTransposeBackwardWeights": ([_X, _Y], dict(_CT, weights_shape=_W)),
    "ConvolutionBackwardData": ([_X, _W], dict(_CONV, dst_shape=(2, 3, 10))),
    "Convolution": ([(2, 3, 10), _W], _CONV),
    "ConvolutionBackwardWeights": ([(2, 3, 10), _X], dict(_CONV, weights_shape=_W)),
}
#: The FLOPs of those two problems: 2 * N * C_in * C_out/groups * K * (ConvTranspose's src positions).
FLOPS = {"transposed": 2 * 2 * 4 * 3 * 2 * 5, "convolution": 2 * 2 * 4 * 3 * 2 * 5}


def test_every_entry_has_a_problem_here():
    assert set(PROBLEMS) == set(registry.SPECS)


@pytest.mark.parametrize("kind", FUNCTIONAL)
def test_the_functional_api_and_the_reference_agree(kind):
    name = registry.function(kind)
    api, ref = inspect.signature(getattr(ops, name)), inspect.signature(getattr(reference, name))
    def described(sig):
        return [(p.name, p.kind, p.default) for p in sig.parameters.values() if p.name != "out"]
    assert described(api) == described(ref)
    # The entry's inputs lead the signature, in order.
    names = registry.input_names(kind)
    assert list(api.parameters)[:len(names)] == list(names)


@pytest.mark.parametrize("kind", ALL)
def test_every_entry_has_a_reference_and_its_inputs(kind):
    spec = registry.SPECS[kind]
    ref = inspect.signature(getattr(reference, spec.function))
    assert list(ref.parameters)[:len(spec.inputs)] == list(spec.inputs)
    for name in spec.optional_inputs:
        assert ref.parameters[name].default is None
    if spec.shape_attr:
        assert spec.shape_attr in ref.parameters
    assert spec.spec == hasattr(ops, spec.function)


@pytest.mark.parametrize("kind", ALL)
def test_the_weights_formats_are_what_the_checks_take(kind):
    spec = registry.SPECS[kind]
    assert _attrs.normalize(kind, 1).weights_format == spec.weights_formats[0]
    for fmt in spec.weights_formats:
        assert _attrs.normalize(kind, 1, weights_format=fmt).weights_format == fmt
    with pytest.raises(ValueError, match="weights_format"):
        _attrs.normalize(kind, 1, weights_format="IXO")


@pytest.mark.parametrize("kind", ALL)
def test_the_entry_describes_a_planned_problem(kind):
    spec = registry.SPECS[kind]
    inputs, kw = PROBLEMS[kind]
    plan = shapes.plan(kind, inputs, **kw)
    tensors = list(inputs) + [plan.output_shape]
    # The primitive's tensors: src and dst are data, weights are the weights.
    src, weights, dst = (tensors[i] for i in spec.primitive_tensors)
    assert len(src) == len(dst) == 3 and weights == _W
    # The equivalent ConvTranspose: every op of a family computes the same products.
    assert _plan.problem(plan, inputs).flops == FLOPS["transposed" if spec.transposed else "convolution"]
    assert accumulation_terms(plan, inputs) >= 1
    if spec.crop_tensor is not None:
        assert lowering.geometry_tensor(kind) == spec.crop_tensor
        # the crop tensor has ConvTranspose's output geometry: 10 = 2*(5-1) + 2 positions
        assert shapes.data_spatial("NCX", tensors[spec.crop_tensor]) == (10,)
    # The kernel probe builds this entry's primitive for the problem.
    attrs = lowering.lower(plan, inputs).attrs if spec.spec else dict(
        lowering.spelled_natively(plan.attrs), **({spec.shape_attr: list(plan.output_shape)}
                                                  if spec.shape_attr else {}))
    assert kernels.for_op(kind, attrs, "f32", inputs[:2], plan.output_shape).status == "native"


def test_the_legacy_name_maps_onto_its_op():
    legacy = registry.LEGACY
    assert registry.spec(legacy.kind) is registry.SPECS[legacy.current]
    current, kw, fmt = shapes.current_form(legacy.kind, {"filter_format": "OIX",
                                                         "filter_shape": [3, 4, 5]})
    assert (current, fmt) == (legacy.current, "OIX")
    assert kw == {"weights_format": "IOX", "weights_shape": (4, 3, 5)}
    assert set(legacy.formats.values()) == set(registry.SPECS[legacy.current].weights_formats)


@pytest.mark.parametrize("kind", ALL)
def test_batched_tensors_are_those_the_batch_splits(kind):
    """An entry's `batched` tensors may run one part of the batch at a time (the f32
    chain does, _impl.as_f32.batch_rows): the reference on the first sample of them
    gives the first sample of the result; a weights gradient, which sums over the
    batch, has none. Truth: the float64 reference."""
    import numpy as np

    spec = registry.SPECS[kind]
    inputs, kw = PROBLEMS[kind]
    rng = np.random.default_rng(0)
    args = [rng.uniform(-1, 1, s) for s in inputs]
    whole = getattr(reference, spec.function)(*args, **kw)
    part = [a[:1] if i in spec.batched else a for i, a in enumerate(args)]
    part_kw = dict(kw)
    if spec.shape_attr and registry.OUTPUT in spec.batched:
        part_kw[spec.shape_attr] = (1,) + tuple(kw[spec.shape_attr][1:])
    if spec.batched:
        assert registry.OUTPUT in spec.batched and 0 in spec.batched
        np.testing.assert_allclose(getattr(reference, spec.function)(*part, **part_kw), whole[:1],
                                   rtol=1e-12, atol=1e-12)
    else:  # the result sums over the batch: half of it is not half of the result
        half = [a[:1] if len(a.shape) == 3 and a.shape[0] == 2 else a for a in args]
        assert not np.allclose(getattr(reference, spec.function)(*half, **kw), whole)
