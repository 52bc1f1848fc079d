"""The implementation of onednn_graph: nothing here is public API.

The public modules (``onednn_graph.ops``, ``operation``, ``graph``, ...) sit above
these and import them; these never import a public module above ``shapes``,
``reference`` and ``tolerance`` (tests/unit/test_layers.py holds the order).
"""

from typing import Any


def export(module: str, *objects: Any) -> None:
    """Show `objects`, defined here and exported by the public `module`, as that
    module's (their ``__module__``: what ``help``, reprs and the API reference print)."""
    for obj in objects:
        obj.__module__ = module
