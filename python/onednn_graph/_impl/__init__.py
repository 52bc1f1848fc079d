"""The engine of onednn_graph: nothing here is public API.

The public faces (``onednn_graph.ops``, ``operation``, ``graph``, ...), the tools
(``onednn_graph._tools``) and PyTorch's layers sit above these modules and import
them; these import only each other and the value types (``errors``, ``post``,
``quant``, ``shapes``), never a face, a tool or ``torch``, not even in a function
(tests/unit/test_layers.py holds the order and that rule).
"""

from typing import Any


def export(module: str, *objects: Any) -> None:
    """Show `objects`, defined here and exported by the public `module`, as that
    module's (their ``__module__``: what ``help``, reprs and the API reference print)."""
    for obj in objects:
        obj.__module__ = module
