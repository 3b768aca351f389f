"""What a test must leave exactly as it found it: the project's Python environment and its packs.

`snapshot()` records every file under the runner's site-packages and
`benchpacks/` (bytecode caches aside) with its inode change time (ctime), size and mtime, and the
bytes' sha256 for the packs and for every startup hook (`*.pth`,
`sitecustomize`, `usercustomize`) in site-packages. ctime cannot be set back
from user space, so a file written and then restored "even for a moment"
still differs (issue 31). ~10k files: about a second.
"""

from __future__ import annotations

import hashlib
import os
import site
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ("sitecustomize", "usercustomize")


def roots() -> list[Path]:
    return [Path(p) for p in site.getsitepackages() if os.path.isdir(p)] + [ROOT / "benchpacks"]


def snapshot() -> dict[str, tuple]:
    found: dict[str, tuple] = {}
    packs = ROOT / "benchpacks"
    for root in roots():
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                st = path.lstat()
                if path.is_dir() and not path.is_symlink():
                    # a directory's times move when Python caches bytecode beside the sources
                    # (__pycache__, left out above): its existence and mode are what count
                    found[str(path)] = (st.st_mode,)
                    continue
                entry = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                hooked = path.suffix == ".pth" or path.stem in HOOKS or packs in path.parents
                if hooked and path.is_file() and not path.is_symlink():
                    entry += (hashlib.sha256(path.read_bytes()).hexdigest(),)
                found[str(path)] = entry
    return found


def differences(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
