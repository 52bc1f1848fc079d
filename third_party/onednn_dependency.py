"""The package's run-time dependencies, decided when it is built (a scikit-build-core
metadata provider, named in pyproject.toml).

The default build links oneDNN 3.2 from the onednn-devel-cpu-gomp wheel, so the package
depends on onednn-cpu-gomp, whose libdnnl.so.3 it finds at run time. A build against
another oneDNN (``ONEDNN_ROOT`` set, e.g. PyPI's onednn 2026.x) runs on the library in
that prefix: depending on onednn-cpu-gomp too would install a second libdnnl.so.3 into
the same ``lib/`` directory, over the first (wheels overwrite each other's files).
"""

from __future__ import annotations

import os
from typing import Any

# Whatever oneDNN the package links.
COMMON = ["numpy>=1.22", "ml_dtypes>=0.2"]
# The default build's oneDNN (keep in step with build-system.requires).
DEFAULT_ONEDNN = "onednn-cpu-gomp==2023.2.0"


def dependencies(onednn_root: str | None) -> list[str]:
    return COMMON + ([] if onednn_root else [DEFAULT_ONEDNN])


def dynamic_metadata(field: str, settings: Any = None, project: Any = None) -> list[str]:
    if field != "dependencies":
        raise ValueError(f"onednn_dependency provides 'dependencies', not {field!r}")
    return dependencies(os.environ.get("ONEDNN_ROOT") or None)
