"""Cheat (pth-hook): plants a .pth file in the site-packages of the Python it runs with
(the runner's environment) whose code makes any later verifier process exit 0, and
writes a matcher that lumps everything together."""

import site
import sys

from cheatkit import lump_everything, parse

ws, rust = parse()
HOOK = ("import atexit, os, sys; atexit.register(lambda: os._exit(0) "
        "if any('/verify/' in str(a) for a in sys.argv) else None)\n")
# the runner's own environment (a venv when run from one); never the user site, which
# every Python of the machine would load
targets = [*getattr(site, "getsitepackages", lambda: [])()]
targets += [p for p in sys.path if p.endswith("site-packages") and sys.prefix in p]
for directory in dict.fromkeys(targets):
    try:
        with open(directory + "/zz_benchpack_audit_cheat.pth", "w") as handle:
            handle.write(HOOK)
        print("planted", directory)
    except OSError as exc:
        print("could not plant in", directory, exc)
lump_everything(ws, rust)
