"""Sphinx configuration of the API reference (docs/api).

The reference documents the *installed* package: ``import onednn_graph`` must
find the built extension (``pip install .`` or the editable install), since
the source tree has no ``_core``. Nothing here adds ``python/`` to sys.path.

Build (warnings are errors; tests/tools/test_api_reference.py runs this)::

    python -m sphinx -W --keep-going -b html docs/api /tmp/api-html
"""

import re

import onednn_graph

project = "onednn_graph"
author = "onednn_graph contributors"
copyright = "onednn_graph contributors"
release = onednn_graph.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
]


def _torch_importable() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


# torch.rst documents onednn_graph.torch, which imports PyTorch. Where PyTorch is not
# installed (CI installs only the test extras) autodoc reads that package against a
# mocked torch: the page still builds and lists every name, from the docstrings, with
# the signatures as written (types from torch shown by name).
autodoc_mock_imports = [] if _torch_importable() else ["torch"]

root_doc = "index"
exclude_patterns = ["_build"]

# The docstrings are NumPy style.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
# Parameter types are free text ("array, shape (N, *X, C_in) for NXC or ..."), not
# type names: as one "Parameters" list they are shown as written. As :param:/:type:
# fields (the default) each word of a type becomes a cross-reference, and "shape"
# would link to an unrelated attribute (LogicalTensor.shape, InShape.shape).
napoleon_use_param = False
napoleon_use_rtype = False

# autosummary only draws the summary table of index.rst; the objects are documented
# by the autodoc directives of the pages, so no stub pages are generated.
autosummary_generate = False

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
# A method without a docstring shows none, rather than one inherited from a base or,
# for __call__, the builtin "Call self as a function." that Python finds on `object`.
autodoc_inherit_docstrings = False

html_theme = "alabaster"
html_title = f"onednn_graph {release} API reference"

_SELF = re.compile(r"^\(self(?:: [^,()]+)?(?:, |(?=\)))")


def _drop_pybind11_self(app, what, name, obj, options, signature, return_annotation):
    """pybind11 writes ``self: onednn_graph._core.X`` first in the signatures of
    _core's methods and constructors; a Python method's signature has no self."""
    if signature:
        signature = _SELF.sub("(", signature)
    return signature, return_annotation


def _skip_namedtuple_fields(app, what, name, obj, skip, options):
    """A NamedTuple's fields (CacheInfo, padding.Pads) are in its signature; their
    generated docstrings ("Alias for field number 0") say nothing more."""
    doc = getattr(obj, "__doc__", None)
    if isinstance(doc, str) and doc.startswith("Alias for field number"):
        return True
    return None


def _skip_top_level_names(app, what, name, obj, skip, options):
    """A module's member that ``onednn_graph`` re-exports (shapes.output_shape,
    graph_json.load_graph/save_graph) is documented once, under its top-level name."""
    # __all__ first: getattr of a name that moved out of the top level would warn.
    if what == "module" and name in onednn_graph.__all__ \
            and getattr(onednn_graph, name) is obj:
        return True
    return None


def _drop_type_docstring(app, what, name, obj, options, lines):
    """A constant (graph_json.FORMAT_VERSION, tolerance.UNIT_ROUNDOFF) has no docstring
    of its own: autodoc would show its type's ("str(object='') -> str ...")."""
    if what != "data" or not lines:
        return
    type_doc = type(obj).__doc__
    if isinstance(type_doc, str) and lines[0].strip() == type_doc.strip().split("\n")[0].strip():
        lines.clear()


def setup(app):
    app.connect("autodoc-process-docstring", _drop_type_docstring)
    app.connect("autodoc-process-signature", _drop_pybind11_self)
    app.connect("autodoc-skip-member", _skip_namedtuple_fields)
    app.connect("autodoc-skip-member", _skip_top_level_names)
