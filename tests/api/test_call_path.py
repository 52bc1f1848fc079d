"""Which of the package's Python files one functional-API call passes through.

Truth: ``sys.setprofile`` sees every Python function the call enters; the files
they live in, in the order first entered, are the call's path. CONTRIBUTING.md's
"Following one call" lists the same files (between the markers this test reads),
so the description cannot drift from the code: a change of the path fails here
until the paragraph says it. A cached call must stay at most 3 files (the Python
around one native call), a first call at most 8 (issue 30: the face, the call, the
arrays, the plan, the geometry and its attributes, the lowering, the compiled op).
"""

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import onednn_graph as og
from onednn_graph import cache

PACKAGE = os.path.dirname(og.__file__)
CONTRIBUTING = Path(__file__).resolve().parents[2] / "CONTRIBUTING.md"


def files_entered(call):
    """The package's files whose functions `call()` enters, in first-entered order."""
    seen: list[str] = []

    def profile(frame, event, arg):
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(PACKAGE) and name not in seen:
            seen.append(name)
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return [os.path.relpath(f, PACKAGE).replace(os.sep, "/") for f in seen]


def documented(which):
    """The files CONTRIBUTING.md lists for a `which` ("first" or "cached") call."""
    text = CONTRIBUTING.read_text()
    found = re.search(rf"<!-- {which} call: -->(.*?)<!-- end -->", text, re.S)
    assert found, f"CONTRIBUTING.md lacks the <!-- {which} call: --> list"
    return re.findall(r"`([\w/]+\.py)`", found.group(1))


@pytest.fixture
def f32_call():
    x = np.ones((1, 4, 5, 5), np.float32)
    w = np.ones((4, 6, 3, 3), np.float32)
    return lambda: og.conv_transpose(x, w, strides=2, data_format="NCX", weights_format="IOX")


def test_a_first_and_a_cached_call_follow_the_documented_path(f32_call):
    cache.clear_cache()
    first = files_entered(f32_call)
    cached = files_entered(f32_call)
    assert first == documented("first"), first
    assert cached == documented("cached"), cached
    assert len(cached) <= 3
    assert len(first) <= 9
