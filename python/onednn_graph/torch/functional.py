"""PyTorch's transposed convolution and convolution gradients, computed by oneDNN.

``conv_transpose1d/2d/3d`` take exactly ``torch.nn.functional.conv_transposeNd``'s
arguments (each per-axis argument an int or a sequence of 1 or N ints, as PyTorch
broadcasts them), plus what PyTorch lacks for transposed convolutions: ``padding``
as one ``(begin, end)`` pair per axis, ``"same"`` (output ``stride * input``) or
``"valid"`` (``onednn_graph.padding.from_torch``). They are differentiable: the
input's gradient is ConvTransposeBackwardData, the weight's
ConvTransposeBackwardWeights, the bias's a oneDNN reduction, each computed only
when autograd needs it. ``convNd_input`` is ``torch.nn.grad.convNd_input`` on
ConvolutionBackwardData, ``conv_transposeNd_weight`` the weight gradient of
``conv_transposeNd`` on ConvTransposeBackwardWeights.

A mistake raises what PyTorch raises, a RuntimeError, which is also the package's
ValueError (``ArgumentError``) or, for dtypes, TypeError (``DTypeError``); messages name
the tensors as PyTorch does (input, weight, bias, grad_output, input_size, weight_size).
A non-tensor argument is a plain TypeError, as in PyTorch.

Every traced, transformed or autocast call goes through a registered custom op
(``torch.ops.onednn_graph.*``, ``_library``), so ``torch.compile(fullgraph=True)`` and
``torch.export`` see one node per op; a plain eager call runs the same function and
gradient formula without the dispatcher's custom-op layers (``_eager``).
"""

from __future__ import annotations

import contextlib
import functools
import re
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import torch

from .. import padding as _padding, shapes
from ..torch_like import padding_per_axis as _padding_arg, per_axis as _torch_like_per_axis
from . import _eager, _library

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "conv1d_input", "conv2d_input", "conv3d_input",
           "conv_transpose1d_weight", "conv_transpose2d_weight", "conv_transpose3d_weight"]

IntOrSeq = Union[int, Sequence[int]]
PaddingArg = Union[str, int, Sequence[Any]]


class ArgumentError(ValueError, RuntimeError):
    """A bad shape or value given to a torch layer: a ValueError, as the package raises
    for one, and a RuntimeError, as PyTorch's convolutions raise for the same mistake, so
    that ``except RuntimeError`` written for ``torch.nn`` catches it too."""


class DTypeError(TypeError, RuntimeError):
    """Tensors of a dtype the op does not take, or of different dtypes: a TypeError to
    the package, a RuntimeError as PyTorch raises ("expected scalar type ...")."""


_DTYPES = (torch.float32, torch.bfloat16, torch.float16)

# The package's tensor names (oneDNN's) and PyTorch's, for messages raised below the
# torch layer.
_TORCH_NAMES = {"src": "input", "weights": "weight", "weights_shape": "weight_size",
                "dst_shape": "input_size", "diff_dst": "grad_output", "diff_src": "grad_input",
                "dst": "output"}
_ONEDNN_NAME = re.compile(r"\b(" + "|".join(sorted(_TORCH_NAMES, key=len, reverse=True)) + r")\b")


def _torch_error(fn: str, exc: Exception) -> Exception:
    """An error of the package's checks below as PyTorch raises it (also a RuntimeError),
    its tensors under PyTorch's names."""
    if isinstance(exc, (ArgumentError, DTypeError)):
        return exc
    if isinstance(exc, ValueError):
        return ArgumentError(_torch_message(fn, exc))
    # an argument of the wrong type (stride=1.5): PyTorch's TypeError too; a wrong dtype
    # is a DTypeError already (_check_dtypes, first)
    return TypeError(_torch_message(fn, exc))


@contextlib.contextmanager
def _in_torch_terms(fn: str) -> Iterator[None]:
    """``_torch_error`` around a block."""
    try:
        yield
    except (ValueError, TypeError) as exc:
        raise _torch_error(fn, exc) from None


def _torch_message(fn: str, exc: Exception) -> str:
    message = _ONEDNN_NAME.sub(lambda m: _TORCH_NAMES[m.group(1)], str(exc))
    return message if message.startswith(f"{fn}:") else f"{fn}: {message}"


def _per_axis(fn: str, name: str, value: Any, nsp: int, least: int) -> list[int]:
    """``torch_like.per_axis``, its ValueErrors as PyTorch's errors."""
    with _in_torch_terms(fn):
        return _torch_like_per_axis(fn, name, value, nsp, least)


def _check_tensor(fn: str, name: str, value: Any) -> None:
    if not isinstance(value, torch.Tensor):  # a TypeError in PyTorch too
        raise TypeError(f"{fn}: {name} must be a torch.Tensor, got {type(value).__name__}")


def _check_rank(fn: str, name: str, shape: Sequence[Any], ndims: Sequence[int]) -> None:
    if len(shape) not in ndims:
        raise ArgumentError(f"{fn}: {name} must be {' or '.join(map(str, ndims))}-D, got shape "
                            f"{tuple(shape)}")


def _check_dtypes(fn: str, **dtypes: Optional[torch.dtype]) -> None:
    """One dtype for all tensors of `dtypes` (None: no tensor), one the ops take (PyTorch,
    too, refuses a mix)."""
    given = {name: dtype for name, dtype in dtypes.items() if dtype is not None}
    first, dtype = next(iter(given.items()))
    if dtype not in _DTYPES:
        raise DTypeError(f"{fn}: {first} is {dtype}; the ops take float32, bfloat16, float16")
    for name, other in given.items():
        if other != dtype:
            raise DTypeError(f"{fn}: {name} is {other} and {first} {dtype}: they must share "
                             f"one dtype")


def _autocast_eligible(t: Optional[torch.Tensor], dtype: torch.dtype) -> bool:
    """Whether CPU autocast casts `t` to `dtype` for an op of its lower-precision list
    (which holds ``conv_transposeNd``): a floating CPU tensor but float64, of another dtype."""
    return (t is not None and t.is_floating_point() and t.dtype != torch.float64 and t.is_cpu
            and t.dtype != dtype)


def _autocast(*tensors: Optional[torch.Tensor]) -> list:
    """`tensors` as CPU autocast casts them (``_autocast_eligible``)."""
    dtype = torch.get_autocast_dtype("cpu")
    return [t.to(dtype) if t is not None and _autocast_eligible(t, dtype) else t for t in tensors]


_CT_NAMES = {n: f"conv_transpose{n}d" for n in (1, 2, 3)}


def _checked_conv_transpose(nsp: int, input_shape: Sequence[Any], input_dtype: torch.dtype,
                            weight_shape: Sequence[Any], weight_dtype: torch.dtype,
                            bias_shape: Optional[Sequence[Any]], bias_dtype: Optional[torch.dtype],
                            stride: IntOrSeq, padding: PaddingArg, output_padding: IntOrSeq,
                            groups: int, dilation: IntOrSeq) -> _eager.Call:
    """Every check of a conv_transposeNd call that its tensors' shapes and dtypes and its
    other arguments settle, in PyTorch's terms; its attributes and result shape."""
    fn = _CT_NAMES[nsp]
    _check_rank(fn, "input", input_shape, (nsp + 1, nsp + 2))
    _check_rank(fn, "weight", weight_shape, (nsp + 2,))
    if bias_shape is not None:
        _check_rank(fn, "bias", bias_shape, (1,))
    _check_dtypes(fn, input=input_dtype, weight=weight_dtype, bias=bias_dtype)
    _check_groups(fn, groups)
    batched = tuple(input_shape) if len(input_shape) == nsp + 2 else (1, *input_shape)
    if batched[1] != weight_shape[0]:
        raise ArgumentError(f"{fn}: weight {tuple(weight_shape)} expects {weight_shape[0]} input "
                            f"channels (its first axis), input {tuple(input_shape)} has "
                            f"{batched[1]}")
    _check_divisible(fn, "the input channels", weight_shape[0], groups)
    if bias_shape is not None and bias_shape[0] != weight_shape[1] * groups:
        raise ArgumentError(f"{fn}: bias must have {weight_shape[1] * groups} elements (the "
                            f"output channels), got {bias_shape[0]}")
    strides, pads_begin, pads_end, extra, dilations, out_spatial = _geometry(
        fn, stride, padding, output_padding, dilation, tuple(weight_shape[2:]),
        tuple(batched[2:]))
    attrs = (list(strides), list(pads_begin), list(pads_end), list(extra), list(dilations), groups)
    return _eager.make_call(attrs, (batched[0], weight_shape[1] * groups, *out_spatial), batched,
                            tuple(weight_shape))


# A module calls with the same arguments every step: their checks and conversion (about
# 25 us, measured on a Zen 4) are done once per distinct call.
_cached_conv_transpose = functools.lru_cache(maxsize=1024, typed=True)(_checked_conv_transpose)


def _conv_transpose_nd(nsp: int, input: Any, weight: Any, bias: Any, stride: IntOrSeq,
                       padding: PaddingArg, output_padding: IntOrSeq, groups: int,
                       dilation: IntOrSeq) -> torch.Tensor:
    fn = _CT_NAMES[nsp]
    _check_tensor(fn, "input", input)
    _check_tensor(fn, "weight", weight)
    if bias is not None:
        _check_tensor(fn, "bias", bias)
    dtypes = (input.dtype, weight.dtype, None if bias is None else bias.dtype)
    shapes_ = (input.shape, weight.shape, None if bias is None else bias.shape)
    if _library.jit_tracing():
        shapes_ = _library.traced_shapes(input, weight, bias)
    if torch.is_autocast_enabled("cpu"):
        # Autocast casts before the dtypes are compared, so that an input a bf16 layer
        # wrote meets f32 weights as in torch.nn: here where the call runs eagerly, else
        # in the registered op's AutocastCPU kernel, where the call runs (an exported
        # program run outside autocast stays in f32, as torch.nn's does).
        if _library.untraced(input, weight, bias):
            input, weight, bias = _autocast(input, weight, bias)
            dtypes = (input.dtype, weight.dtype, None if bias is None else bias.dtype)
        else:
            cast = torch.get_autocast_dtype("cpu")
            dtypes = tuple(cast if _autocast_eligible(t, cast) else d
                           for t, d in zip((input, weight, bias), dtypes))
    args = (nsp, shapes_[0], dtypes[0], shapes_[1], dtypes[1], shapes_[2], dtypes[2],
            stride, padding, output_padding, groups, dilation)
    call = _cached_call(_cached_conv_transpose, _checked_conv_transpose, args)
    unbatched = input.dim() == nsp + 1
    x = input.unsqueeze(0) if unbatched else input
    try:  # (a with block costs a layer call a microsecond)
        y = _eager.conv_transpose(x, weight, bias, call)
    except (ValueError, TypeError) as exc:
        raise _torch_error(fn, exc) from None
    return y.squeeze(0) if unbatched else y


def _geometry(fn: str, stride: IntOrSeq, padding: PaddingArg, output_padding: IntOrSeq,
              dilation: IntOrSeq, kernel: tuple, in_spatial: tuple) -> tuple:
    """PyTorch's per-axis arguments as the op takes them, checked: (strides, pads_begin,
    pads_end, output_padding, dilations, output spatial size), each a tuple, for an
    output of >= 1 per axis."""
    nsp = len(kernel)
    strides = _per_axis(fn, "stride", stride, nsp, 1)
    dilations = _per_axis(fn, "dilation", dilation, nsp, 1)
    extra = _per_axis(fn, "output_padding", output_padding, nsp, 0)
    with _in_torch_terms(fn):
        pads = _padding.from_torch(_padding_arg(padding, nsp), extra, kernel=kernel,
                                   strides=strides, dilations=dilations)
    out_spatial = [shapes.conv_transpose_out_size(*axis) for axis in zip(
        in_spatial, kernel, strides, dilations, pads.pads_begin, pads.pads_end,
        pads.output_padding)]
    if any(v < 1 for v in out_spatial):
        raise ArgumentError(f"{fn}: input of {tuple(in_spatial)} per channel gives an output of "
                            f"{tuple(out_spatial)}: too small (padding too large for the kernel, "
                            f"stride and dilation)")
    return (tuple(strides), tuple(pads.pads_begin), tuple(pads.pads_end),
            tuple(pads.output_padding), tuple(dilations), tuple(out_spatial))


def _cached_call(cached: Callable[..., Any], plain: Callable[..., Any], args: tuple) -> Any:
    """``cached(*args)``, a memo of ``plain``, where the arguments are hashable and nothing
    traces the call (torch.compile sees the plain function, with symbolic sizes)."""
    if torch.compiler.is_compiling():
        return plain(*args)
    try:
        return cached(*args)
    except TypeError as exc:
        if "unhashable" not in str(exc):
            raise
        return plain(*args)  # lists: computed each time


def _check_groups(fn: str, groups: Any) -> None:
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise TypeError(f"{fn}: groups must be an int, got {groups!r}")
    if groups < 1:
        raise ArgumentError(f"{fn}: groups must be >= 1, got {groups}")


def _check_divisible(fn: str, what: str, channels: int, groups: int) -> None:
    if channels % groups:
        raise ArgumentError(f"{fn}: {what} ({channels}) must be divisible by groups ({groups})")


def conv_transpose1d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                     stride: IntOrSeq = 1, padding: PaddingArg = 0, output_padding: IntOrSeq = 0,
                     groups: int = 1, dilation: IntOrSeq = 1) -> torch.Tensor:
    """``torch.nn.functional.conv_transpose1d`` on oneDNN: input ``(N, C_in, L)`` or
    ``(C_in, L)``, weight ``(C_in, C_out/groups, K)``, bias ``(C_out,)``; ``padding`` may
    also be ``[(begin, end)]``, ``"same"`` or ``"valid"``.

    Examples
    --------
    >>> import torch
    >>> from onednn_graph.torch import conv_transpose1d
    >>> x = torch.arange(3.0).reshape(1, 1, 3)
    >>> conv_transpose1d(x, torch.ones(1, 1, 2), stride=2)
    tensor([[[0., 0., 1., 1., 2., 2.]]])
    """
    return _conv_transpose_nd(1, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def conv_transpose2d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                     stride: IntOrSeq = 1, padding: PaddingArg = 0, output_padding: IntOrSeq = 0,
                     groups: int = 1, dilation: IntOrSeq = 1) -> torch.Tensor:
    """``torch.nn.functional.conv_transpose2d`` on oneDNN (see :func:`conv_transpose1d`).
    A channels-last input or weight gives a channels-last result (PyTorch's rule), read
    and written in place."""
    return _conv_transpose_nd(2, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def conv_transpose3d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                     stride: IntOrSeq = 1, padding: PaddingArg = 0, output_padding: IntOrSeq = 0,
                     groups: int = 1, dilation: IntOrSeq = 1) -> torch.Tensor:
    """``torch.nn.functional.conv_transpose3d`` on oneDNN (see :func:`conv_transpose1d`)."""
    return _conv_transpose_nd(3, input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def _conv_input(nsp: int, input_size: Sequence[int], weight: torch.Tensor, grad_output: torch.Tensor,
                stride: IntOrSeq, padding: IntOrSeq, dilation: IntOrSeq, groups: int) -> torch.Tensor:
    fn = f"conv{nsp}d_input"
    _check_tensor(fn, "weight", weight)
    _check_tensor(fn, "grad_output", grad_output)
    _check_rank(fn, "weight", weight.shape, (nsp + 2,))
    _check_rank(fn, "grad_output", grad_output.shape, (nsp + 2,))
    _check_dtypes(fn, grad_output=grad_output.dtype, weight=weight.dtype)
    _check_groups(fn, groups)
    size = [int(v) for v in input_size]
    if len(size) != nsp + 2:
        raise ArgumentError(f"{fn}: input_size must have {nsp + 2} entries (N, C_in, *X), got "
                            f"{size}")
    if grad_output.shape[1] != weight.shape[0]:
        raise ArgumentError(f"{fn}: weight {tuple(weight.shape)} expects {weight.shape[0]} "
                            f"channels of grad_output (its first axis), grad_output "
                            f"{tuple(grad_output.shape)} has {grad_output.shape[1]}")
    _check_divisible(fn, "the output channels", weight.shape[0], groups)
    pads = _per_axis(fn, "padding", padding, nsp, 0)
    with _in_torch_terms(fn):
        return _library.convolution_backward_data(
            grad_output, weight, size, _per_axis(fn, "stride", stride, nsp, 1), pads, pads,
            _per_axis(fn, "dilation", dilation, nsp, 1), groups)


def conv1d_input(input_size: Sequence[int], weight: torch.Tensor, grad_output: torch.Tensor,
                 stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                 groups: int = 1) -> torch.Tensor:
    """``torch.nn.grad.conv1d_input`` on oneDNN's ConvolutionBackwardData: the gradient of
    ``conv1d(input, weight)`` with respect to its input of `input_size`, weight
    ``(C_out, C_in/groups, K)``."""
    return _conv_input(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size: Sequence[int], weight: torch.Tensor, grad_output: torch.Tensor,
                 stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                 groups: int = 1) -> torch.Tensor:
    """``torch.nn.grad.conv2d_input`` on oneDNN (see :func:`conv1d_input`)."""
    return _conv_input(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size: Sequence[int], weight: torch.Tensor, grad_output: torch.Tensor,
                 stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                 groups: int = 1) -> torch.Tensor:
    """``torch.nn.grad.conv3d_input`` on oneDNN (see :func:`conv1d_input`)."""
    return _conv_input(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def _conv_transpose_weight(nsp: int, input: torch.Tensor, weight_size: Sequence[int],
                           grad_output: torch.Tensor, stride: IntOrSeq, padding: PaddingArg,
                           output_padding: IntOrSeq, groups: int, dilation: IntOrSeq) -> torch.Tensor:
    fn = f"conv_transpose{nsp}d_weight"
    _check_tensor(fn, "input", input)
    _check_tensor(fn, "grad_output", grad_output)
    _check_rank(fn, "input", input.shape, (nsp + 2,))
    _check_rank(fn, "grad_output", grad_output.shape, (nsp + 2,))
    _check_dtypes(fn, input=input.dtype, grad_output=grad_output.dtype)
    _check_groups(fn, groups)
    size = [int(v) for v in weight_size]
    if len(size) != nsp + 2:
        raise ArgumentError(f"{fn}: weight_size must have {nsp + 2} entries (C_in, C_out/groups, "
                            f"*K), got {size}")
    if input.shape[1] != size[0] or grad_output.shape[1] != size[1] * groups:
        raise ArgumentError(f"{fn}: weight_size {tuple(size)} with groups {groups} takes an input "
                            f"of {size[0]} channels and a grad_output of {size[1] * groups}, got "
                            f"{input.shape[1]} and {grad_output.shape[1]}")
    strides = _per_axis(fn, "stride", stride, nsp, 1)
    dilations = _per_axis(fn, "dilation", dilation, nsp, 1)
    with _in_torch_terms(fn):
        pads = _padding.from_torch(_padding_arg(padding, nsp),
                                   _per_axis(fn, "output_padding", output_padding, nsp, 0),
                                   kernel=tuple(size[2:]), strides=strides, dilations=dilations)
        return _library.conv_transpose_backward_weights(
            input, grad_output, size, strides, list(pads.pads_begin), list(pads.pads_end),
            list(pads.output_padding), dilations, groups)


def conv_transpose1d_weight(input: torch.Tensor, weight_size: Sequence[int], grad_output: torch.Tensor,
                            stride: IntOrSeq = 1, padding: PaddingArg = 0,
                            output_padding: IntOrSeq = 0, groups: int = 1,
                            dilation: IntOrSeq = 1) -> torch.Tensor:
    """The gradient of ``conv_transpose1d(input, weight, ...)`` with respect to its weight of
    `weight_size` ``(C_in, C_out/groups, K)``, on oneDNN's ConvTransposeBackwardWeights."""
    return _conv_transpose_weight(1, input, weight_size, grad_output, stride, padding,
                                  output_padding, groups, dilation)


def conv_transpose2d_weight(input: torch.Tensor, weight_size: Sequence[int], grad_output: torch.Tensor,
                            stride: IntOrSeq = 1, padding: PaddingArg = 0,
                            output_padding: IntOrSeq = 0, groups: int = 1,
                            dilation: IntOrSeq = 1) -> torch.Tensor:
    """As :func:`conv_transpose1d_weight`, in 2-D."""
    return _conv_transpose_weight(2, input, weight_size, grad_output, stride, padding,
                                  output_padding, groups, dilation)


def conv_transpose3d_weight(input: torch.Tensor, weight_size: Sequence[int], grad_output: torch.Tensor,
                            stride: IntOrSeq = 1, padding: PaddingArg = 0,
                            output_padding: IntOrSeq = 0, groups: int = 1,
                            dilation: IntOrSeq = 1) -> torch.Tensor:
    """As :func:`conv_transpose1d_weight`, in 3-D."""
    return _conv_transpose_weight(3, input, weight_size, grad_output, stride, padding,
                                  output_padding, groups, dilation)


def __dir__() -> list[str]:
    return list(__all__)
