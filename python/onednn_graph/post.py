"""Post-ops: what oneDNN fuses after a ConvTranspose into one partition.

``og.conv_transpose(x, w, b, strides=2, post_ops=[post.relu(), post.add(skip)])``
runs the op, its bias and then each post-op in order, as oneDNN's fusion policy
compiles them: one partition, which writes the result once, where the linked
oneDNN fuses the chain (oneDNN 3.2's ``convtranspose_post_ops_fusion`` pattern:
an optional BiasAdd, then unary and binary ops, src/graph/backend/dnnl/patterns/
convtranspose_fusion.cpp), else the partitions it returns, one after the other.
``og.reference.post_ops`` applies the same chain in float64.

Unary post-ops are oneDNN's eltwise ops, with its attributes; binary ones take a
second operand, an array of the result's shape or one that broadcasts to it
NumPy-style (e.g. a skip connection, or per-channel values shaped ``(C, 1, 1)``
for NCX data), in the result's dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PostOp", "UNARY", "BINARY", "abs", "clamp", "elu", "exp", "gelu", "hardsigmoid",
           "hardswish", "leaky_relu", "log", "mish", "relu", "round", "sigmoid", "softplus",
           "sqrt", "square", "tanh", "add", "multiply", "maximum", "minimum", "subtract",
           "divide", "of_kind"]

#: oneDNN 3.2's unary and binary ops that its ConvTranspose pattern fuses (patterns/utils.hpp).
UNARY = ("Abs", "Clamp", "Elu", "Exp", "GELU", "HardSigmoid", "HardSwish", "LeakyReLU", "Log",
         "Mish", "Sigmoid", "SoftPlus", "ReLU", "Round", "Sqrt", "Square", "Tanh")
#: Its binary ones: a second operand broadcast NumPy-style to the result.
BINARY = ("Add", "Multiply", "Maximum", "Minimum", "Subtract", "Divide")


@dataclass(frozen=True)
class PostOp:
    """One post-op: a oneDNN op `kind`, its attributes, and for a binary op its second
    operand (any array the functional API accepts)."""

    kind: str
    attrs: tuple[tuple[str, float], ...] = ()
    operand: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in UNARY + BINARY:
            raise ValueError(f"post-op kind must be one of {', '.join(UNARY + BINARY)}, got {self.kind!r}")
        if (self.operand is None) != (self.kind in UNARY):
            raise ValueError(f"{self.kind} takes {'no' if self.kind in UNARY else 'one'} operand")


def _number(op: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"post.{op}: {name} must be a number, got {value!r}")
    return float(value)


def abs() -> PostOp:  # noqa: A001 - oneDNN's name
    """``|y|``."""
    return PostOp("Abs")


def clamp(min: float, max: float) -> PostOp:  # noqa: A002
    """``min(max(y, min), max)``."""
    lo, hi = _number("clamp", "min", min), _number("clamp", "max", max)
    if lo > hi:
        raise ValueError(f"post.clamp: min ({lo}) must not exceed max ({hi})")
    return PostOp("Clamp", (("min", lo), ("max", hi)))


def elu(alpha: float = 1.0) -> PostOp:
    """``y`` where ``y > 0``, else ``alpha * (exp(y) - 1)``."""
    return PostOp("Elu", (("alpha", _number("elu", "alpha", alpha)),))


def exp() -> PostOp:
    return PostOp("Exp")


def gelu() -> PostOp:
    """``y * (1 + erf(y / sqrt(2))) / 2`` (the erf form, oneDNN 3.2's GELU)."""
    return PostOp("GELU")


def hardsigmoid(alpha: float = 1 / 6, beta: float = 0.5) -> PostOp:
    """``min(max(alpha * y + beta, 0), 1)``."""
    return PostOp("HardSigmoid", (("alpha", _number("hardsigmoid", "alpha", alpha)),
                                  ("beta", _number("hardsigmoid", "beta", beta))))


def hardswish() -> PostOp:
    """``y * min(max(y + 3, 0), 6) / 6``."""
    return PostOp("HardSwish")


def leaky_relu(alpha: float = 0.01) -> PostOp:
    """``y`` where ``y >= 0``, else ``alpha * y``."""
    return PostOp("LeakyReLU", (("alpha", _number("leaky_relu", "alpha", alpha)),))


def log() -> PostOp:
    return PostOp("Log")


def mish() -> PostOp:
    """``y * tanh(softplus(y))``."""
    return PostOp("Mish")


def relu() -> PostOp:
    return PostOp("ReLU")


def round() -> PostOp:  # noqa: A001
    """To the nearest integer, halves to even."""
    return PostOp("Round")


def sigmoid() -> PostOp:
    return PostOp("Sigmoid")


def softplus(beta: float = 1.0) -> PostOp:
    """``log(1 + exp(beta * y)) / beta``."""
    return PostOp("SoftPlus", (("beta", _number("softplus", "beta", beta)),))


def sqrt() -> PostOp:
    return PostOp("Sqrt")


def square() -> PostOp:
    return PostOp("Square")


def tanh() -> PostOp:
    return PostOp("Tanh")


def add(other: Any) -> PostOp:
    """``y + other`` (e.g. a skip connection)."""
    return PostOp("Add", operand=other)


def multiply(other: Any) -> PostOp:
    return PostOp("Multiply", operand=other)


def maximum(other: Any) -> PostOp:
    return PostOp("Maximum", operand=other)


def minimum(other: Any) -> PostOp:
    return PostOp("Minimum", operand=other)


def subtract(other: Any) -> PostOp:
    """``y - other``."""
    return PostOp("Subtract", operand=other)


def divide(other: Any) -> PostOp:
    """``y / other``."""
    return PostOp("Divide", operand=other)


def of_kind(kind: str, operand: Any = None) -> PostOp:
    """The post-op of oneDNN op `kind` with this module's default attributes (Clamp: [0, 1])."""
    if kind == "Clamp":
        return clamp(0.0, 1.0)
    made = {p().kind: p for p in (abs, elu, exp, gelu, hardsigmoid, hardswish, leaky_relu, log,
                                  mish, relu, round, sigmoid, softplus, sqrt, square, tanh)}
    if kind in made:
        return made[kind]()
    return PostOp(kind, operand=operand)


def __dir__() -> list[str]:
    return list(__all__)
