"""The package's layers: every module has a place, and imports only go down.

Truth: the modules' own import statements (read with ``ast``, function-level
imports included), held against the order below. A module imports only modules
of lower layers, so there are no import cycles, and the implementation
(``onednn_graph._impl``) never reaches the public API above what it builds on.
A new module fails this test until it is given a layer.
"""

import ast
from pathlib import Path

import onednn_graph

PACKAGE = Path(onednn_graph.__file__).parent

# Lowest first. Names are relative to onednn_graph ("" is the package itself).
LAYERS = [
    ("native module and data", {"errors", "_core", "_impl.registry", "_impl.dtypes", "_impl", "_tools"}),
    ("attributes and the library", {"_impl.attrs", "_impl.version"}),
    ("geometry", {"shapes"}),
    ("rules", {"_impl.arrays", "_impl.lowering", "_impl.cost", "_impl.kernels", "_impl.casts",
               "tolerance",
               "padding", "post", "quant", "_impl.kept_apart"}),
    ("reference, plans, compiled ops", {"reference", "_impl.plan", "_impl.compiled",
                                        "_impl.json_format"}),
    ("a compiled op on views of the arrays", {"_impl.formed"}),
    ("other forms of a compiled op", {"_impl.as_f32", "_impl.unreached", "_impl.matmul_form",
                                      "_impl.packed_form", "_impl.polyphase_form", "_impl.tuning",
                                      "_impl.tuning_db"}),
    ("calls and spec-level ops", {"_impl.call", "_impl.spec_op", "_tools.graph_reference"}),
    ("spec-level graphs", {"_impl.spec_graph"}),
    ("oneDNN's objects", {"graph"}),
    ("fused calls", {"_impl.fused"}),
    ("functional API and JSON", {"ops", "graph_json", "torch._channel_sum"}),
    ("compiled operations and graph tools", {"operation", "torch_like", "overrides",
                                             "_tools.runner", "torch._library"}),
    ("PyTorch's functional API", {"torch.functional"}),
    ("PyTorch's modules", {"torch.modules"}),
    ("the PyTorch package", {"torch"}),
    ("reproducers and probes", {"reproducer", "_tools.support", "_tools.fusion"}),
    ("reports", {"_tools.info"}),
    ("benchdnn batch files", {"batch"}),
    ("command", {"cli"}),
    ("entry points", {"", "__main__"}),
]
LAYER = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """The package modules that `path` imports (relative imports, any depth)."""
    module = _module(path).split(".") if _module(path) else []
    package = module if path.name == "__init__.py" else module[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            for alias in node.names:
                candidate = ".".join(base + [alias.name])
                found.add(candidate if candidate in LAYER else ".".join(base))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("onednn_graph"):
                    found.add(alias.name[len("onednn_graph."):] if "." in alias.name else "")
    return found - {_module(path)}


def test_every_module_has_a_layer():
    modules = {_module(p) for p in PACKAGE.rglob("*.py")}
    assert modules - set(LAYER) == set(), "give these modules a layer in LAYERS"
    assert set(LAYER) - modules - {"_core"} == set(), "LAYERS names modules that do not exist"


def test_imports_only_go_down():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = _module(path)
        for target in _imports(path):
            if LAYER[target] >= LAYER[here]:
                wrong.append(f"{here or 'onednn_graph'} ({LAYERS[LAYER[here]][0]}) imports "
                             f"{target} ({LAYERS[LAYER[target]][0]})")
    assert not wrong, "\n".join(wrong)


def test_the_implementation_stays_private():
    """Public modules are imported as modules; none re-exports an _impl module by a
    public name (they bind them as _name)."""
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "_impl" and node.level == 1:
                for alias in node.names:
                    assert (alias.asname or alias.name).startswith("_"), (path.name, alias.name)
