"""The core's folders are layers: each imports only the folders below it.

The order is the table between the `folder-order` markers in docs/internals.md;
every import counts, also one inside a function (a lazy import is still an
arrow). A folder missing from the table fails too, so a new folder is placed
on purpose.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "benchpack"
TOP_LEVEL_BELOW_ALL = {"errors", "ids", "digest", "__init__"}  # errors.py, ids.py, digest.py, the package face
TOP_LEVEL_ABOVE_ALL = {"cli", "__main__"}


def documented_order() -> list[str]:
    text = (ROOT / "docs" / "internals.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- folder-order: bottom to top -->(.*?)<!-- /folder-order -->", text, re.S)
    assert block, "docs/internals.md has no folder-order table"
    return re.findall(r"^\|\s*\d+\s*\|\s*`([a-z_]+)/`", block.group(1), re.M)


def imported_modules(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """Every module path an import in `path` names (absolute or relative)."""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - (node.level - 1)])
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def folder_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "benchpack" or len(parts) < 2:
        return None
    return parts[1]


def test_every_folder_is_in_the_documented_order():
    folders = {p.name for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    order = documented_order()
    assert len(order) == len(set(order)), f"a folder is listed twice: {order}"
    assert set(order) == folders, (
        f"docs/internals.md folder order {sorted(order)} differs from benchpack/'s folders {sorted(folders)}")


def test_no_import_runs_back_up():
    rank = {name: i for i, name in enumerate(documented_order())}
    top = len(rank)
    upward = []
    for path in sorted(CORE.rglob("*.py")):
        parts = path.relative_to(CORE).parts
        if "kits" in parts:  # verifykit is copied into candidate workspaces, never imported by the core
            continue
        if len(parts) == 1:
            name = path.stem
            own = -1 if name in TOP_LEVEL_BELOW_ALL else top if name in TOP_LEVEL_ABOVE_ALL else None
            assert own is not None, f"benchpack/{path.name}: a top-level module not placed in this test's lists"
        else:
            own = rank[parts[0]]
        for line, module in imported_modules(path):
            target = folder_of(module)
            if target is None or target not in rank:  # top-level modules below all, or not benchpack
                if target in TOP_LEVEL_ABOVE_ALL and own < top:
                    upward.append(f"{path.relative_to(ROOT)}:{line}: imports {module} (the CLI is on top)")
                continue
            if rank[target] > own:
                upward.append(f"{path.relative_to(ROOT)}:{line}: imports {module} "
                              f"({target}/ is above {parts[0] if len(parts) > 1 else path.stem})")
    assert not upward, "imports running back up the folder order:\n" + "\n".join(upward)


def test_the_rule_catches_an_upward_import(tmp_path):
    """The checker itself: an upward import is seen, also a relative one inside a function."""
    sample = tmp_path / "benchpack" / "measurement" / "x.py"
    sample.parent.mkdir(parents=True)
    sample.write_text("def f():\n    from ..run import runner\n")
    targets = {folder_of(module) for _, module in imported_modules(sample, tmp_path)}
    order = documented_order()
    assert "run" in targets and order.index("run") > order.index("measurement")


SERVICE_PACKAGES = ("django", "rest_framework", "drf_spectacular", "celery", "allauth", "registry_site",
                    "submissions", "accounts")


def test_the_core_never_imports_django_or_the_service():
    """`benchpack/` runs without the registry: no import of Django, its apps or the service's packages, anywhere
    in it (a lazy import too). Text that merely names Django (a cheat fixture's source in a string) is no import."""
    found = []
    for path in sorted(CORE.rglob("*.py")):
        if "kits" in path.relative_to(CORE).parts:
            continue
        for line, module in imported_modules(path):
            if module.split(".")[0] in SERVICE_PACKAGES:
                found.append(f"{path.relative_to(ROOT)}:{line}: imports {module}")
    assert not found, "the core imports the service:\n" + "\n".join(found)


def test_the_service_import_check_sees_a_lazy_django_import(tmp_path):
    sample = tmp_path / "benchpack" / "interop" / "x.py"
    sample.parent.mkdir(parents=True)
    sample.write_text("def f():\n    from django.db import models\n    import submissions.models\n")
    assert {m.split(".")[0] for _, m in imported_modules(sample, tmp_path)} == {"django", "submissions"}
