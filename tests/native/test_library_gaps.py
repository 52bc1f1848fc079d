"""The package lowers an op only where the linked oneDNN needs it.

Every lowering in ``_impl/lowering.py`` was written for a gap of oneDNN 3.2 (it
refuses the op as the spec writes it, or computes other numbers) and was found
unchanged in oneDNN 3.13.2 (PyPI's onednn 2026.1.0; docs/onednn-3.13.md). Each
feature of ``support.FEATURES`` is run here twice on the linked library, as the
spec writes it and through the package: a feature the package lowers must still
be a gap of this library, so a oneDNN that closes one fails this test and names
the lowering that should then hand the op over as written for that version.
Truth: the float64 reference, with the package's bound (``support._check``).
"""

import pytest

import onednn_graph as og
from onednn_graph._impl import registry, support as _support

#: Lowerings kept where oneDNN computes this small case right as written, and why.
KEPT = {
    # 3.2 and 3.13 resolve SAME pads of the backward ops with the convolution rule,
    # on another tensor's size than ConvTranspose uses: on this case the numbers
    # agree, on others the op is not the gradient of its own ConvTranspose
    # (test_lowering's auto_pad cases). Resolving explicitly keeps the three adjoint.
    ("ConvTransposeBackwardData", "auto_pad same_upper"),
}

CASES = [(kind, feature) for kind in registry.KINDS for feature, change in _support.FEATURES.items()
         if not (change.get("shape_form") and not registry.spec(kind).shape_attr)]


@pytest.mark.parametrize("kind, feature", CASES, ids=[f"{k}-{f}" for k, f in CASES])
def test_the_package_lowers_only_what_this_onednn_cannot_run_as_written(kind, feature):
    p = _support.problem(_support.Case(kind, **_support.FEATURES[feature]))
    literal, package = _support.literal(p), _support.package(p)
    v = og.onednn_version()
    assert package.status in ("native", "lowered"), f"{kind} {feature}: the package gave {package}"
    if package.status == "native":
        assert literal.status == "native", (
            f"{kind} {feature}: handed over as written, yet oneDNN {v.major}.{v.minor} as "
            f"written gives {literal}")
    elif (kind, feature) not in KEPT and not feature.startswith("shape as s32"):
        # (the s32 shape input is read in Python on every version: its value is known
        # only when the partition executes)
        assert literal.status != "native", (
            f"{kind} {feature}: oneDNN {v.major}.{v.minor} runs it as written, so the "
            f"lowering '{package.detail}' is not needed on this version; hand it over "
            "natively there (_impl/lowering.py)")
