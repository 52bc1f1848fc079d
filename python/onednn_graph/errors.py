"""Exceptions of onednn_graph.

``Error`` is raised for every failure reported by oneDNN (the C++ extension
translates ``dnnl::error`` into it); ``UnsupportedError`` for a valid request
that the linked oneDNN cannot run and that the package cannot lower to
operations it can run. Argument checks raise the built-in ``TypeError`` and
``ValueError``.
"""

from __future__ import annotations

__all__ = ["Error", "UnsupportedError"]


class Error(RuntimeError):
    """A failure reported by oneDNN.

    Attributes
    ----------
    status : str
        oneDNN's status name: ``"invalid_arguments"``, ``"invalid_shape"``,
        ``"unimplemented"``, ``"invalid_graph_op"``, ...

    Examples
    --------
    >>> from onednn_graph import Error
    >>> e = Error("could not compile a partition", "unimplemented")
    >>> e.status
    'unimplemented'
    """

    def __init__(self, message: str, status: str = "runtime_error") -> None:
        super().__init__(f"{message} (oneDNN status: {status})")
        self.message, self.status = message, status


class UnsupportedError(Error):
    """A valid operation that the linked oneDNN cannot execute.

    The message names the op, the dtype and the attributes involved.

    Examples
    --------
    >>> from onednn_graph import UnsupportedError, Error
    >>> issubclass(UnsupportedError, Error)
    True
    """

    def __init__(self, message: str, status: str = "unimplemented") -> None:
        super().__init__(message, status)


def __dir__() -> list[str]:
    return list(__all__)
