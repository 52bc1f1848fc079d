"""Which modules know the package's ops by name: a ratchet towards issue 30's registry.

Truth: the modules' own source, read with ``ast``. A module "compares an op's
kind" when one of its comparisons (``==``, ``!=``, ``in``, ``not in``) names one of
the registry's ops: a string such as ``"ConvTranspose"``, or one of the
registry's kind constants (``_registry.CONV_BWD_DATA``, ``LEGACY``). Which op a
call is should be a question to the registry (an ``OpSpec`` field, or a function
it names), not a branch spelled out elsewhere. Issue 30 asks that at most three
modules compare; this test pins the set so that it can only shrink: a module that starts comparing fails
here (add the fact to ``_impl/registry.py`` instead), and a module that stops
must be taken off the list. Comparisons of oneDNN's other op kinds (Dequantize,
the post-ops) are not the registry's and are not counted.
"""

import ast
from pathlib import Path

import onednn_graph
from onednn_graph._impl import registry

PACKAGE = Path(onednn_graph.__file__).parent
KIND_NAMES = set(registry.SPECS) | {registry.LEGACY.kind}
KIND_CONSTANTS = {name for name, value in vars(registry).items()
                  if name.isupper() and (value in KIND_NAMES if isinstance(value, str) else
                                         value is registry.LEGACY)}

#: The modules that compare an op's kind. Take a module off when it stops; never add
#: one. Besides the registry: what oneDNN 3.2 is handed (``_impl.lowering``: each
#: rewrite is a gap of one op). CONTRIBUTING says why. (``shapes`` left the list when
#: its output rules became one per primitive, found by the registry's ``primitive``.)
STILL_COMPARING = {"_impl/registry.py", "_impl/lowering.py"}


def _names_a_kind(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr in KIND_CONSTANTS:
            return True
        if isinstance(n, ast.Name) and n.id in KIND_CONSTANTS:
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
    assert _names_a_kind(ast.parse("kind != _registry.LEGACY.kind"))
    assert not _names_a_kind(ast.parse("dtype == 'f32'"))
    assert not _names_a_kind(ast.parse("op.kind == 'Dequantize'"))


def test_no_new_module_compares_op_kinds():
    now = comparing_modules()
    assert now - STILL_COMPARING == set(), "these modules began comparing op kinds: ask " \
        "_impl/registry.py instead"
    assert STILL_COMPARING - now == set(), "these modules no longer compare op kinds: take " \
        "them off STILL_COMPARING"


CASES = {  # geometries of ConvTranspose (NCX/IOX unless said)
    "plain": dict(strides=2),
    "negative pads_begin": dict(strides=2, pads_begin=-1),
    "SAME_UPPER with output_padding, NXC": dict(strides=2, output_padding=1, auto_pad="same_upper",
                                               data_format="NXC", weights_format="XOI"),
}


def test_a_fifth_op_shows_which_modules_would_have_to_change(monkeypatch):
    """A copy of ConvTranspose under a new name, added to the registry, planned as
    ConvTranspose is: where its plan differs is a module that names the ops. The
    geometry carries the copy over (``shapes`` finds its output rule by the
    registry's ``primitive``); ``_impl/lowering.py`` does not: its rules say
    ``kind == CONV_TRANSPOSE``, so the copy loses output_padding, resolves auto_pad
    itself and takes a cropped view as unreached. Lowering is in STILL_COMPARING;
    every other step asks the registry."""
    import dataclasses

    import numpy as np

    from onednn_graph._impl import plan as _plan

    fake = dataclasses.replace(registry.SPECS[registry.CONV_TRANSPOSE], kind="FakeTranspose")
    monkeypatch.setitem(registry.SPECS, "FakeTranspose", fake)
    # (the table the registry derives from SPECS when it loads)
    monkeypatch.setitem(registry.SHAPE_ATTRS, "FakeTranspose", fake.shape_attr)
    implicated = set()
    for name, kw in CASES.items():
        kw = dict(dict(data_format="NCX", weights_format="IOX"), **kw)
        x = np.ones((1, 4, 5, 5) if kw["data_format"] == "NCX" else (1, 5, 5, 4), np.float32)
        w = np.ones((4, 6, 3, 3) if kw["weights_format"] == "IOX" else (3, 3, 6, 4), np.float32)
        real = _plan.plan_call(registry.CONV_TRANSPOSE, fake.inputs, [x, w], kw)
        copy = _plan.plan_call("FakeTranspose", fake.inputs, [x, w], kw)
        if copy.plan.output_shape != real.plan.output_shape:
            implicated.add("shapes.py")
        elif dataclasses.replace(copy.native, kind=real.native.kind) != real.native:
            implicated.add("_impl/lowering.py")
    assert implicated <= STILL_COMPARING
    assert implicated == {"_impl/lowering.py"}
