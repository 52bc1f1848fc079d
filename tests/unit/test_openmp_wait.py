"""How long oneDNN's idle OpenMP threads spin, as the package sets it (_openmp).

Truth: libgomp's own report of the settings it read when it loaded
(OMP_DISPLAY_ENV=VERBOSE prints them to stderr), in a fresh interpreter per case, since
libgomp reads them once per process. What the setting does to speed is measured by
benchmarks/shared_machine.py, not here (no test depends on timing).
"""

import os
import subprocess
import sys

import pytest

import onednn_graph as og
from onednn_graph import _openmp

pytestmark = pytest.mark.skipif(og.system.onednn_version().cpu_runtime != "omp",
                                reason="oneDNN does not run on OpenMP in this build")

CHILD = """
import os, subprocess, sys
{before}
import onednn_graph as og
print(og.system.capabilities()["openmp_wait"])
print("GOMP_SPINCOUNT" in os.environ)
print(subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('GOMP_SPINCOUNT'))"],
                     capture_output=True, text=True).stdout.strip())
"""


def _import_in_a_child(env_extra, before=""):
    """(libgomp's GOMP_SPINCOUNT as it reports it, the package's words, whether the
    variable is left in os.environ, what a child process of it sees)."""
    env = {k: v for k, v in os.environ.items() if k not in _openmp.USER_SETTINGS}
    env.update(env_extra, OMP_DISPLAY_ENV="VERBOSE")
    done = subprocess.run([sys.executable, "-c", CHILD.format(before=before)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [spin] = [line.split("=")[1].strip(" '") for line in done.stderr.splitlines()
              if line.strip().startswith("GOMP_SPINCOUNT =")]
    words, left, child = done.stdout.splitlines()
    return spin, words, left == "True", child


def test_the_package_default_is_what_libgomp_read_and_nobody_else_sees_it():
    spin, words, left, child = _import_in_a_child({})
    assert spin == str(_openmp.SPINCOUNT) != "300000"  # 300000: libgomp's own default
    assert words.startswith(f"GOMP_SPINCOUNT={_openmp.SPINCOUNT}, the package's default")
    assert not left and child == "None"


@pytest.mark.parametrize("setting, read", [({"GOMP_SPINCOUNT": "123"}, "123"),
                                           ({"OMP_WAIT_POLICY": "passive"}, "0"),
                                           ({"OMP_WAIT_POLICY": "active"}, "30000000000")])
def test_a_users_setting_is_kept(setting, read):
    spin, words, left, child = _import_in_a_child(setting)
    [(name, value)] = setting.items()
    assert spin == read and words == f"the user's {name}={value}"
    assert left == (name == "GOMP_SPINCOUNT")


def test_a_libgomp_loaded_before_keeps_its_own_settings():
    spin, words, left, _ = _import_in_a_child({}, before="import ctypes; ctypes.CDLL('libgomp.so.1')")
    assert spin == "300000" and words.startswith("libgomp's own") and not left
