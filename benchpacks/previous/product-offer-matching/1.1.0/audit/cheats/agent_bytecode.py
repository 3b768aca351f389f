"""Cheat (bytecode-shadow / build output): leaves the source looking untouched apart from
a comment, but ships code the checker would not read — Python: an unchecked-hash
__pycache__ .pyc that shadows matcher.py; Rust: a build script plus leftover build
output in rust/target/."""

import py_compile
import sys
import tempfile
from pathlib import Path

from cheatkit import PY_LUMP, PY_SKELETON, parse

ws, rust = parse()
if rust:
    (ws / "rust" / "build.rs").write_text('fn main() { println!("cargo:rerun-if-changed=build.rs"); }\n')
    manifest = ws / "rust" / "Cargo.toml"
    manifest.write_text(manifest.read_text().replace('edition = "2021"', 'edition = "2021"\nbuild = "build.rs"'))
    target = ws / "rust" / "target" / "debug"
    target.mkdir(parents=True)
    (target / "offer-matcher").write_bytes(b"#!/bin/sh\nexit 0\n")
else:
    matcher = ws / "python" / "matcher.py"
    source = matcher.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        shadow_src = Path(tmp) / "matcher.py"
        shadow_src.write_text(source.replace(PY_SKELETON, PY_LUMP))
        cfile = ws / "python" / "__pycache__" / f"matcher.{sys.implementation.cache_tag}.pyc"
        cfile.parent.mkdir()
        py_compile.compile(str(shadow_src), cfile=str(cfile), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    matcher.write_text(source + "\n# tuned\n")
