"""Objects dropped in any order, and the interpreter exiting with everything
still alive, never crash. Each scenario runs in a fresh interpreter
(conftest.run_python), so a crash at teardown or exit fails the test.
"""

import pytest

from helpers import run_python

SETUP = """
import gc, sys, threading
import numpy as np
import onednn_graph as og

def build():
    e = og.Engine()
    x = og.LogicalTensor(0, "f32", (1, 2, 5))
    w = og.LogicalTensor(1, "f32", (2, 3, 2))
    y = og.LogicalTensor(2, "f32", (1, 3, 6))
    g = og.Graph()
    g.add_op(og.Op(0, "ConvTranspose", [x, w], [y], {"strides": [1], "pads_begin": [0],
             "pads_end": [0], "dilations": [1], "data_format": "NCX", "weights_format": "IOX"}))
    g.finalize()
    [p] = g.get_partitions()
    cp = p.compile([x, w], [y], e)
    s = og.Stream(e)
    a = {"x": np.ones((1, 2, 5), np.float32), "w": np.ones((2, 3, 2), np.float32),
         "y": np.zeros((1, 3, 6), np.float32)}
    t = {"x": og.Tensor(x, e, a["x"]), "w": og.Tensor(w, e, a["w"]), "y": og.Tensor(y, e, a["y"])}
    return dict(e=e, x=x, w=w, y=y, g=g, p=p, cp=cp, s=s, a=a, t=t)

def execute(o):
    o["cp"].execute(o["s"], [o["t"]["x"], o["t"]["w"]], [o["t"]["y"]])
    # All-ones src and weights: every dst element sums 2 channels x (1 or 2) taps.
    v = o["t"]["y"].numpy()
    assert v.min() == 2 and v.max() == 4, v
"""

SCENARIOS = {
    # The Tensors hold their arrays: dropping the caller's names changes nothing.
    "arrays-before-tensors": """
o = build(); del o["a"]; gc.collect(); execute(o)
""",
    # A compiled partition keeps its engine; the Python Graph and Partition may go first.
    "graph-and-partition-before-compiled": """
o = build(); del o["g"], o["p"]; gc.collect(); execute(o)
""",
    "engine-before-partition-and-stream": """
o = build(); del o["e"]; gc.collect(); execute(o)
p = og.Graph(); del p
""",
    "compiled-before-graph": """
o = build(); execute(o); del o["cp"]; gc.collect(); o["g"].get_partitions(); del o["g"]; gc.collect()
""",
    "stream-before-engine": """
o = build(); del o["s"]; gc.collect(); o["s"] = og.Stream(o.pop("e")); gc.collect(); execute(o)
""",
    # A view from Tensor.numpy() keeps the memory alive after the Tensor and the array are gone.
    "view-outlives-tensor-and-array": """
o = build(); execute(o); v = o["t"]["y"].numpy(); del o; gc.collect()
assert v.min() == 2 and v.max() == 4
""",
    "logical-tensors-before-everything": """
o = build(); del o["x"], o["w"], o["y"]; gc.collect(); execute(o)
""",
    "everything-in-random-orders": """
import random
for seed in range(20):
    o = build(); execute(o)
    keys = list(o); random.Random(seed).shuffle(keys)
    for k in keys:
        del o[k]; gc.collect()
""",
    # Reference cycles through the objects, collected by the cyclic GC at exit.
    "cycles-at-exit": """
o = build(); execute(o); o["self"] = o; o["cp"].__dict__ if hasattr(o["cp"], "__dict__") else None
""",
    # The functional API's caches (compiled ops, engine, thread-local streams) are
    # torn down at interpreter exit, with results and compiled ops still referenced.
    "module-caches-at-exit": """
from onednn_graph._impl import compiled as _compiled
x = np.ones((1, 5, 2), np.float32)
keep = [og.conv_transpose(x, np.ones((2, 3, 2), np.float32), strides=s) for s in (1, 2, 3)]
keep.append(og.conv_transpose_backward_weights(x, keep[0], (2, 3, 2)))
ops = list(_compiled.CACHE.values())
assert len(_compiled.CACHE) >= 4
""",
    "module-caches-from-threads-at-exit": """
x = np.ones((1, 5, 2), np.float32)
def work():
    for s in (1, 2):
        og.conv_transpose(x, np.ones((2, 3, 2), np.float32), strides=s)
ts = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in ts]; [t.join(60) for t in ts]
""",
    # A daemon thread still inside oneDNN calls when the interpreter exits.
    "daemon-thread-running-at-exit": """
x = np.ones((4, 64, 32, 32), np.float32); w = np.ones((64, 64, 3, 3), np.float32)
started = threading.Event()
def work():
    while True:
        og.conv_transpose(x, w, data_format="NCX", weights_format="IOX"); started.set()
threading.Thread(target=work, daemon=True).start()
started.wait(60)
""",
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_drop_order_and_exit(scenario):
    out = run_python(SETUP + SCENARIOS[scenario] + "\nprint('done')\n")
    assert out.strip().endswith("done")
