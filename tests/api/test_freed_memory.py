"""``onednn_graph.system.keep_freed_memory``: freed blocks stay in the heap, warm.

Truth: the kernel's count of the process's minor page faults (``getrusage``) over
allocations that touch every page, in fresh interpreters (the setting is process-wide and
one-way): the pattern that faults on every round under glibc's moving thresholds faults on
none once they are fixed. Only on glibc, which the package's wheels target.
"""

import platform

import pytest

from helpers import run_python

# Three 24 MiB NumPy arrays filled and freed, five rounds; prints the faults of the last
# three. Under glibc's moving thresholds each round gives the heap's top back on free and
# faults again (Debian 12's glibc 2.36 on Zen 4: 3,042 faults in the three rounds).
CHILD = """
import resource, numpy as np
import onednn_graph as og
print(og.system.keep_freed_memory() if {keep} else None)
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
counted = 0
for round in range(5):
    before = faults()
    arrays = [np.ones(6 << 20, np.float32) for _ in range(3)]
    del arrays
    if round >= 2:
        counted += faults() - before
print(counted)
print(og.system.capabilities()["freed_memory"])
"""

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")


def test_freed_blocks_are_kept_warm():
    kept, faults, caps = run_python(CHILD.format(keep=True)).split("\n")[:3]
    assert kept == "True"
    assert int(faults) < 200, faults
    assert caps == "{'mmap_threshold': 33554432, 'trim_threshold': 1073741824}"


def test_nothing_changes_unless_asked():
    kept, _, caps = run_python(CHILD.format(keep=False)).split("\n")[:3]
    assert kept == "None" and caps == "None"
