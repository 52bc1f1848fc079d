"""Graph.finalize refuses a graph whose data flow no oneDNN partition can follow.

oneDNN 3.2 takes neither a tensor two ops write nor a cycle as an error of its own
through the API: such a graph finalizes and gives no partition, so a user's mistake
showed as an empty partition list (and of one id described two ways it says only
"could not finalize the graph"). And the package's kept_apart pass, which walks
from a Dequantize to the ops that read it, looped forever on a Dequantize -> Add <->
ReLU cycle. ``Graph.finalize`` now names the ops (``_impl.dataflow``, which the JSON
reader uses too: ``tests/unit/test_graph_json_checks.py``).

The hang is the failure this guards against, so each graph finalizes in a child
process with a timeout: a regression fails the test instead of stalling the suite.
"""

import subprocess
import sys
import textwrap

import pytest

GRAPHS = {
    "an op that reads its own output": ("""
        a, b, c = (og.LogicalTensor(i, "f32", (1, 4)) for i in range(3))
        graph.add_op(og.Op(0, "ReLU", [a], [b]))
        graph.add_op(og.Op(1, "Add", [b, c], [c]))
        """, "finalize: op 1 reads tensor 2 and writes it: an output id reuses an input id"),
    "a cycle of two ops": ("""
        a, b, c = (og.LogicalTensor(i, "f32", (1, 4)) for i in range(3))
        graph.add_op(og.Op(7, "Add", [a, c], [b]))
        graph.add_op(og.Op(3, "ReLU", [b], [c]))
        """, "finalize: op 7 -> op 3 -> op 7 form a cycle"),
    "a cycle through a Dequantize's readers": ("""
        q = og.LogicalTensor(0, "u8", (1, 4))
        x, s, r = (og.LogicalTensor(i, "f32", (1, 4)) for i in (1, 2, 3))
        graph.add_op(og.Op(0, "Dequantize", [q], [x], {"scales": [0.5], "zps": [0], "qtype": "per_tensor"}))
        graph.add_op(og.Op(1, "Add", [x, r], [s]))
        graph.add_op(og.Op(2, "ReLU", [s], [r]))
        """, "finalize: op 1 -> op 2 -> op 1 form a cycle: each reads a tensor the one before it writes"),
    "a tensor two ops write": ("""
        a, b, c = (og.LogicalTensor(i, "f32", (1, 4)) for i in range(3))
        graph.add_op(og.Op(0, "ReLU", [a], [c]))
        graph.add_op(og.Op(1, "ReLU", [b], [c]))
        """, "finalize: tensor 2 is written by op 0 and by op 1; each tensor has one writer"),
    "one id described two ways": ("""
        a, c = og.LogicalTensor(0, "f32", (1, 4)), og.LogicalTensor(2, "f32", (1, 5))
        graph.add_op(og.Op(0, "ReLU", [a], [og.LogicalTensor(1, "f32", (1, 4))]))
        graph.add_op(og.Op(1, "ReLU", [og.LogicalTensor(1, "f32", (1, 5))], [c]))
        """, "finalize: tensor 1 is f32 of shape [1, 5], strides [5, 1] in op 1's inputs but "
             "f32 of shape [1, 4], strides [4, 1] in op 0's outputs; one id is one tensor"),
}

PROGRAM = """
import onednn_graph as og
graph = og.Graph()
{body}
try:
    graph.finalize()
except og.Error as e:
    print(e.status, str(e), sep="\\n")
else:
    print("finalized", len(graph.get_partitions()), "partitions")
"""


@pytest.mark.parametrize("name", list(GRAPHS))
def test_finalize_names_the_ops_of_a_broken_data_flow(name):
    body, words = GRAPHS[name]
    program = PROGRAM.format(body=textwrap.dedent(body))
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    status, message = done.stdout.strip().split("\n", 1)
    assert status == "invalid_graph"
    assert words in message
