"""Which post-ops the linked oneDNN fuses after each op (``fusable``, which
``capabilities()`` reports): a probe, not the engine. It asks oneDNN's fusion policy
about the very graph a fused call builds (``_impl.fused.chain``), on a small
problem, without compiling anything.
"""

from __future__ import annotations

import functools

from .. import post as _post, quant as _quant
from .._impl import fused as _fused, registry as _registry
from .._impl.fused import Port


#: The chains ``fusable`` asks about: name -> (op kind, int8).
CHAINS = {"ConvTranspose": (_registry.CONV_TRANSPOSE, False),
          "ConvTranspose int8": (_registry.CONV_TRANSPOSE, True),
          "ConvTransposeBackwardData": (_registry.CONV_TRANSPOSE_BWD_DATA, False),
          "ConvolutionBackwardData": (_registry.CONV_BWD_DATA, False)}


@functools.lru_cache(maxsize=None)
def fusable(chain: str = "ConvTranspose") -> dict[str, list[str]]:
    """Which post-ops (``onednn_graph.post``) the linked oneDNN fuses into one partition
    after the op of `chain` (``CHAINS``): ConvTranspose with bias in f32, its int8 form
    (u8 src and s8 weights dequantized, bias, the post-op, Quantize to u8), or a
    backward-data op in f32. Asked of its fusion policy on a small NXC problem, once per
    process (nothing is compiled). ``fused`` and ``apart`` list oneDNN's op kinds."""
    kind, int8 = CHAINS[chain]
    found: dict[str, list[str]] = {"fused": [], "apart": []}
    small, w, b, big = ((1, 4, 4, 4), (1, 16, 4, 1)), ((2, 2, 4, 4), (32, 16, 4, 1)), \
        ((4,), (1,)), ((1, 8, 8, 4), (256, 32, 4, 1))
    attrs = {"strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1],
             "data_format": "NXC", "weights_format": "XOI"}
    spec = _registry.SPECS[kind]
    attrs["weights_format"] = spec.weights_formats[0]  # its channels-last one: XOI or XIO
    # Each tensor by its part in the equivalent ConvTranspose (registry.OpSpec.roles); the
    # int8 form reads u8 src and s8 weights, dequantized.
    metas = {"small": small, "big": big, "weights": w, "bias": b}
    int8_types = {"small": ("u8", _quant.Quantization("u8", (0.5,), (0,))),
                  "weights": ("s8", _quant.Quantization("s8", (0.5,), (0,)))} if int8 else {}
    roles = spec.roles
    ins: list[Port] = [(metas[roles[i]], *int8_types.get(roles[i], ("f32", None)))
                       for i in range(len(spec.inputs))]
    out = metas[roles[_registry.OUTPUT]]
    if spec.shape_attr:  # ConvolutionBackwardData's dst_shape
        attrs[spec.shape_attr] = list(out[0])
    result: Port = (out, "u8", _quant.Quantization("u8", (0.5,), (0,))) if int8 else (out, "f32", None)
    for post_kind in _post.UNARY + _post.BINARY:
        binary = post_kind in _post.BINARY
        post = (post_kind, _post.of_kind(post_kind, 0.0 if binary else None).attrs,
                (out, "f32", None) if binary else None)
        g = _fused.chain((kind, attrs, ins), None, [post], result)[0]
        found["fused" if len(g.get_partitions("fusion")) == 1 else "apart"].append(post_kind)
    return found
