"""``python -m onednn_graph``: the ``onednn-graph`` command."""

import sys

from .cli import main

sys.exit(main())
