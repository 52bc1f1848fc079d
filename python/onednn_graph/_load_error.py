"""Why the native module ``_core`` did not load, in words a user can act on.

Imported only when ``from . import _core`` has failed, so it imports nothing of the
package. The loader's own message names the library it could not open; this says
where that library comes from, where the module looked (its RUNPATH, read from the
file), and what else oneDNN needs (libgomp, GNU OpenMP, from the system).
"""

import importlib.util
import os
import struct
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Optional, Tuple

# The default build's oneDNN, should the package's metadata not say (third_party/README.md).
_ONEDNN_PACKAGE = "onednn-cpu-gomp==2023.2.0"
_LIBGOMP = ("libgomp.so.1 (GNU OpenMP, which the onednn-cpu-gomp build of oneDNN runs on), "
            "which comes from the system, not from pip: your distribution's GCC OpenMP "
            "runtime (libgomp1 on Debian and Ubuntu, libgomp on Fedora, RHEL and SUSE)")


def message(exc: ImportError) -> str:
    """The ImportError's text for `exc`, raised importing ``onednn_graph._core``."""
    loader_said = str(exc)
    try:  # where the import system finds the module's file (editable installs: elsewhere)
        spec = importlib.util.find_spec("onednn_graph._core")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return ("onednn_graph's native module _core is not built here "
                f"({loader_said}). Install the package with `pip install .` (or a wheel) "
                "so that it is built against oneDNN; importing from the source tree does "
                "not work.")
    module = Path(spec.origin)
    if "libgomp.so" in loader_said:
        return (f"onednn_graph's native module cannot load: oneDNN needs {_LIBGOMP}.\n"
                f"The loader said: {loader_said}")
    if "libdnnl.so" not in loader_said:
        return (f"onednn_graph's native module {module} cannot load ({loader_said}); "
                "reinstall the package with `pip install .` (or its wheel) for this Python.")
    folders = _runpath(module)
    looked = ", ".join(folders) if folders else "no folder of its own"
    package = _onednn_requirement()
    if package:
        where = (f"It comes from the {package.split('==')[0]} package: pip install "
                 f"\"{package}\" into this environment (pip installs it with onednn-graph; "
                 "`pip install --target` leaves dependencies out).")
    else:  # built against the oneDNN under ONEDNN_ROOT: its folder is the RUNPATH
        where = ("This build links the oneDNN it was built against (ONEDNN_ROOT at build "
                 "time): put it back there or rebuild against another.")
    return (f"onednn_graph's native module cannot load: libdnnl.so.3 (oneDNN) was not found.\n"
            f"{where}\n"
            f"The module looked in {looked} (its RUNPATH), then LD_LIBRARY_PATH and the "
            f"system's folders.\n"
            f"oneDNN in turn needs {_LIBGOMP}.\n"
            f"The loader said: {loader_said}")


def _onednn_requirement() -> Optional[str]:
    """The oneDNN package onednn-graph depends on, as 'name==version'; None if it
    depends on none (built against another oneDNN) and _ONEDNN_PACKAGE if unknown."""
    try:
        requires = metadata.requires("onednn-graph")
    except metadata.PackageNotFoundError:
        return _ONEDNN_PACKAGE
    for requirement in requires or []:
        if requirement.replace(" ", "").startswith("onednn-cpu-gomp"):
            return requirement.replace(" ", "").split(";")[0]
    return None


def _runpath(library: Path) -> List[str]:
    """The folders in `library`'s DT_RUNPATH (or DT_RPATH), $ORIGIN resolved; [] if the
    file is not a 64-bit little-endian ELF or has none."""
    data = library.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads: List[Tuple[int, int, int]] = []
    dynamic: Optional[Tuple[int, int]] = None
    for i in range(phnum):
        kind, _, offset, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if kind == 1:  # PT_LOAD: maps file offsets to addresses
            loads.append((vaddr, offset, filesz))
        elif kind == 2:  # PT_DYNAMIC
            dynamic = (offset, filesz)
    if dynamic is None:
        return []
    entries: Dict[int, int] = {}
    for at in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, value = struct.unpack_from("<qQ", data, at)
        if tag == 0:  # DT_NULL
            break
        entries.setdefault(tag, value)
    strtab, path = entries.get(5), entries.get(29, entries.get(15))  # DT_STRTAB, RUNPATH, RPATH
    if strtab is None or path is None:
        return []
    start = next((strtab - vaddr + offset for vaddr, offset, size in loads
                  if vaddr <= strtab < vaddr + size), None)
    if start is None:
        return []
    text = data[start + path:data.index(b"\0", start + path)].decode()
    origin = str(library.parent)
    return [os.path.normpath(folder.replace("$ORIGIN", origin).replace("${ORIGIN}", origin))
            for folder in text.split(":") if folder]
