"""The package's layers: every module has a place, and imports only go down.

Truth: the modules' own import statements (read with ``ast``, function-level
imports included, relative or absolute), held against the order below. A module
imports only modules of lower layers, so there are no import cycles. The five
layers of issue 30 (CONTRIBUTING.md, "Layers"), lowest first:

1. value types and errors, and the tables they read (no engine, no native call);
2. the engine, ``onednn_graph._impl``: the native module, planning, lowering,
   compiling, the call cache, the spec-level graph engine;
3. the public faces, thin;
4. the tools (``onednn_graph._tools``, reproducers, overrides, batch files, the CLI);
5. PyTorch's layers (``onednn_graph.torch``); then the entry points.

Each layer is split into sub-layers where its own modules import one another. On
top of the order, the engine is held to its own rule by name (``ABOVE_THE_ENGINE``),
so that moving a module in LAYERS cannot let ``_impl`` import a face or a tool.
A new module fails this test until it is given a layer.
"""

import ast
from pathlib import Path

import onednn_graph

PACKAGE = Path(onednn_graph.__file__).parent

# Lowest first. Names are relative to onednn_graph ("" is the package itself); each
# label starts with its layer's number.
LAYERS = [
    # The registry and the attribute schema sit in _impl but are data that the spec's
    # geometry (shapes) reads: the bottom of the engine and of the value types.
    ("1 data", {"errors", "post", "quant", "_impl.registry", "_impl"}),
    ("1 the attribute schema", {"_impl.attrs"}),
    ("1 geometry", {"shapes"}),
    # The native module reads the dtype table from _impl.arrays when it loads.
    ("2 the NumPy boundary: the dtype table and caller arrays", {"_impl.arrays"}),
    ("2 the native module", {"_core"}),
    ("2 why the native module did not load (imports nothing of the package)", {"_load_error"}),
    ("2 the linked library", {"_impl.version"}),
    ("2 the process's heap", {"_impl.freed_memory"}),
    ("2 rules", {"_impl.lowering", "_impl.kernels", "_impl.casts", "_impl.machine_load", "_impl.batch_parts",
                 "_impl.kept_apart", "_impl.dataflow"}),
    ("2 a rule asked of the kernels", {"_impl.epilogue_apart"}),
    ("2 plans, compiled ops", {"_impl.plan", "_impl.compiled", "_impl.json_format"}),
    ("2 a chain of ops compiled as one (f32 between casts, post-ops)", {"_impl.as_f32"}),
    ("2 a compiled op on views of the arrays", {"_impl.formed"}),
    ("2 other forms of a compiled op", {"_impl.unreached", "_impl.matmul_form",
                                        "_impl.packed_form", "_impl.polyphase_form", "_impl.subpixel_form",
                                        "_impl.split_form",
                                        "_impl.tuning", "_impl.tuning_db"}),
    ("2 calls and spec-level ops", {"_impl.call", "_impl.spec_op"}),
    ("2 spec-level graphs", {"_impl.spec_graph"}),
    ("2 fused calls", {"_impl.fused"}),
    ("3 references and conventions", {"reference", "tolerance", "padding"}),
    ("3 oneDNN's objects", {"graph"}),
    ("3 functional API and JSON", {"ops", "graph_json"}),
    ("3 compiled operations", {"operation", "torch_like", "cache", "tuning"}),
    ("4 graph tools", {"_tools", "_tools.graph_reference", "overrides", "batch"}),
    ("4 the JSON runner and the fusion probe", {"_tools.runner", "_tools.fusion"}),
    ("4 reproducers and the support matrix", {"reproducer", "_tools.support"}),
    ("4 reports", {"_tools.info"}),
    ("4 this installation", {"system"}),
    ("4 command", {"cli"}),
    ("5 PyTorch: the channel sum, processes", {"torch._channel_sum", "torch._processes"}),
    ("5 PyTorch: the ops on tensors", {"torch._native"}),
    ("5 PyTorch: NCX calls on channels-last copies", {"torch._via_nxc"}),
    ("5 PyTorch: custom ops", {"torch._library"}),
    ("5 PyTorch: the eager path", {"torch._eager"}),
    ("5 PyTorch's functional API", {"torch.functional"}),
    ("5 PyTorch: a forward's own functional calls", {"torch._routing"}),
    ("5 PyTorch: whose kernel runs a layer's call", {"torch._kernel_choice"}),
    ("5 PyTorch: a layer's plan", {"torch._layer"}),
    ("5 PyTorch: an inference call as the sub-pixel Convolution", {"torch._subpixel"}),
    ("5 PyTorch: inference (folded, fused, packed)", {"torch._inference"}),
    ("5 PyTorch's modules", {"torch.modules"}),
    ("5 PyTorch: a model's layers swapped", {"torch._convert"}),
    ("5 the PyTorch package", {"torch"}),
    ("the package's deprecated names", {"_deprecated"}),
    ("entry points", {"", "__main__"}),
]
LAYER = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}

#: What the engine (``_impl``) never imports, not even in a function: the public faces,
#: the tools and PyTorch's layers (with everything in ``_tools`` and ``torch``).
ABOVE_THE_ENGINE = {"ops", "operation", "graph", "graph_json", "padding", "torch_like",
                    "overrides", "reproducer", "cli", "batch", "torch", "reference", "tolerance",
                    "cache", "tuning", "system", "_tools"}


def _above_the_engine(module: str) -> bool:
    return module in ABOVE_THE_ENGINE or module.split(".")[0] in ("_tools", "torch")


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """The package modules that `path` imports (relative or absolute, any depth)."""
    module = _module(path).split(".") if _module(path) else []
    package = module if path.name == "__init__.py" else module[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                base += node.module.split(".") if node.module else []
            elif node.module and node.module.split(".")[0] == "onednn_graph":
                base = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:
                candidate = ".".join(base + [alias.name])
                found.add(candidate if candidate in LAYER else ".".join(base))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "onednn_graph":
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


def test_the_engine_imports_no_face_tool_or_torch():
    """No module of ``_impl`` imports a public face, a tool or PyTorch's layers: the
    engine is what they are built on, never the other way round (issue 30)."""
    wrong = sorted(f"{_module(path)} imports {target}" for path in (PACKAGE / "_impl").rglob("*.py")
                   for target in _imports(path) if _above_the_engine(target))
    assert not wrong, "the engine (_impl) imports a face, a tool or PyTorch's layers:\n" + \
        "\n".join(wrong)


def test_the_engine_sits_below_what_it_may_not_import():
    """The names above are modules, all of them above every engine module in LAYERS, and
    every module of _impl is in layer 1 or 2 (a renamed face would leave the rule empty)."""
    assert ABOVE_THE_ENGINE <= set(LAYER)
    engine = {m for m in LAYER if m.split(".")[0] == "_impl"}
    assert all(LAYERS[LAYER[m]][0][0] in "12" for m in engine)
    top = max(LAYER[m] for m in engine)
    low = [m for m in LAYER if _above_the_engine(m) and LAYER[m] <= top]
    assert not low, f"put these above the engine's top ({LAYERS[top][0]}): {low}"


def test_the_implementation_stays_private():
    """Public modules are imported as modules; none re-exports an _impl module by a
    public name (they bind them as _name)."""
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "_impl" and node.level == 1:
                for alias in node.names:
                    assert (alias.asname or alias.name).startswith("_"), (path.name, alias.name)
