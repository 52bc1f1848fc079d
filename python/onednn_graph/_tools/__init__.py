"""The package's tools, private: what runs, probes and reports on the library, built on
the public faces (``graph``, ``graph_json``, ``ops``, ``reference``, ``tolerance``) and on
the engine (``onednn_graph._impl``), which never imports them.

- ``runner``: runs a loaded JSON graph on oneDNN and checks it against the reference
  (``onednn-graph run``), or times it;
- ``graph_reference``: the float64 reference of a whole graph (an op and its fused
  epilogue) and the bound on oneDNN's distance from it;
- ``support``: what the linked oneDNN and the package do with each op as the spec
  writes it (the support matrix, ``scripts/support_matrix.py``);
- ``fusion``: which post-ops the linked oneDNN fuses after each op;
- ``info``: ``capabilities()`` and ``onednn-graph info``, the report of all the above.

tests/unit/test_layers.py holds their place: above the faces, below the command line.
"""
