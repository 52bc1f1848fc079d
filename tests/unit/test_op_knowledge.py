"""Which modules know the ops by name: a ratchet towards issue 30's registry.

Truth: the modules' own source, read with ``ast``. A module "compares an op's
kind" when one of its comparisons (``==``, ``!=``, ``in``, ``not in``) involves an
op kind: a name or attribute called ``kind``, a string naming an op, or one of
the registry's kind constants. Issue 30 asks that at most three modules do
(the registry, the reference and one more); today far more do. This test pins
today's set so that it can only shrink: a module that starts comparing kinds
fails here (move that knowledge into ``_impl/registry.py`` instead), and a module
that stops must be taken off the list.
"""

import ast
from pathlib import Path

import onednn_graph
from onednn_graph import post
from onednn_graph._impl import registry

PACKAGE = Path(onednn_graph.__file__).parent
KIND_NAMES = (set(registry.SPECS) | {registry.LEGACY.kind} | set(post.UNARY) | set(post.BINARY)
              | {"MatMul", "Dequantize", "Quantize", "TypeCast", "BiasAdd", "Reorder", "End"})
KIND_CONSTANTS = {name for name, value in vars(registry).items()
                  if name.isupper() and (value in KIND_NAMES if isinstance(value, str) else
                                         value is registry.LEGACY)}

#: The modules that compare an op's kind today (issue 30's goal: the registry, the
#: reference and one more). Take a module off when it stops; never add one.
STILL_COMPARING = {
    "_impl/as_f32.py", "_impl/attrs.py", "_impl/call.py", "_impl/fused.py",
    "_impl/json_format.py", "_impl/kept_apart.py", "_impl/kernels.py", "_impl/lowering.py",
    "_impl/matmul_form.py", "_impl/plan.py", "_impl/registry.py", "_impl/spec_graph.py",
    "_impl/spec_op.py", "_tools/fusion.py", "_tools/graph_reference.py", "_tools/runner.py",
    "_tools/support.py", "graph_json.py", "operation.py", "overrides.py", "post.py",
    "reference.py", "reproducer.py", "shapes.py",
}


def _names_a_kind(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and (n.attr == "kind" or n.attr in KIND_CONSTANTS):
            return True
        if isinstance(n, ast.Name) and (n.id == "kind" or n.id in KIND_CONSTANTS):
            return True
        if isinstance(n, ast.Constant) and n.value in KIND_NAMES:
            return True
    return False


def comparing_modules() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.Compare) and _names_a_kind(n) for n in ast.walk(tree)):
            found.add(path.relative_to(PACKAGE).as_posix())
    return found


def test_the_constants_are_found():
    # the rule must see the registry's spellings, or it would pass on anything
    assert {"CONV_TRANSPOSE", "CONV_BWD_DATA"} <= KIND_CONSTANTS
    assert _names_a_kind(ast.parse("op.kind == 'ConvTranspose'"))
    assert _names_a_kind(ast.parse("k in (_registry.CONV_BWD_DATA,)"))
    assert not _names_a_kind(ast.parse("dtype == 'f32'"))


def test_no_new_module_compares_op_kinds():
    now = comparing_modules()
    assert now - STILL_COMPARING == set(), "these modules began comparing op kinds: ask " \
        "_impl/registry.py instead"
    assert STILL_COMPARING - now == set(), "these modules no longer compare op kinds: take " \
        "them off STILL_COMPARING"
