"""onednn_graph: oneDNN's Graph API from Python."""

from .errors import Error, UnsupportedError

try:
    from . import _core
except ImportError as exc:  # pragma: no cover - only without a built extension
    raise ImportError(
        "onednn_graph's native module _core is missing or cannot load "
        f"({exc}). Install the package with `pip install .` so that it is built "
        "against oneDNN; importing from the source tree does not work."
    ) from exc

__all__ = ["Error", "UnsupportedError"]
