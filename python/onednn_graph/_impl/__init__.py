"""The implementation of onednn_graph: nothing here is public API.

The public modules (``onednn_graph.ops``, ``operation``, ``graph``, ...) sit above
these and import them; these never import a public module above ``shapes``,
``reference`` and ``tolerance`` (tests/unit/test_layers.py holds the order).
"""
