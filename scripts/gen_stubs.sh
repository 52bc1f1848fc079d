#!/usr/bin/env bash
# Regenerate python/onednn_graph/_core.pyi, the type stubs of the native module.
# Needs the package installed (pip install .) and pybind11-stubgen (pip install ".[dev]").
# Run from anywhere; re-run after changing a binding in cpp/, then `python -m mypy`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cd "$out"  # import the installed package, not the source tree (which has no _core)
python -m pybind11_stubgen onednn_graph._core --numpy-array-remove-parameters -o "$out"
# Two touch-ups pybind11-stubgen does not make: signatures name numpy.ndarray
# without importing numpy (imported under another name, as Tensor has a method
# called numpy), and LogicalTensor's attribute called "property" shadows the
# builtin for the @property decorators after it in that class.
python - "$out/onednn_graph/_core.pyi" "$root/python/onednn_graph/_core.pyi" <<'PY'
import sys
text = open(sys.argv[1]).read()
head = "from __future__ import annotations\n"
text = text.replace(head, head + "import builtins\nimport numpy as _np\n", 1)
text = text.replace("numpy.ndarray", "_np.ndarray")
text = text.replace("    @property\n", "    @builtins.property\n")
open(sys.argv[2], "w").write(text)
PY
echo "wrote $root/python/onednn_graph/_core.pyi"
