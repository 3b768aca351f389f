"""The service's apps run one way: submissions -> catalogue -> project helpers, never back.

The catalogue (`registry_site/catalogue/`) imports nothing from `submissions` or
`accounts.views`, not even inside a function; the project package's helpers
(env, limits, jobs, task names, converters, cache, health) import neither app.
docs/internals.md ("The service's apps") draws the same arrows.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The project's modules that wire the apps together may import both (they are above both).
PROJECT_WIRING = {"urls.py", "api_v1.py", "settings.py", "settings_test.py", "celery.py", "wsgi.py", "demo_data.py", "apps.py"}


def imports_of(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def offending(paths, forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for path in paths:
        for line, module in imports_of(path):
            if module.split(".")[0] in forbidden or module in forbidden:
                bad.append(f"{path.relative_to(ROOT)}:{line}: imports {module}")
    return bad


def test_the_catalogue_imports_nothing_from_submissions():
    bad = offending(sorted((ROOT / "registry_site" / "catalogue").rglob("*.py")), ("submissions",))
    assert not bad, "the catalogue imports submissions:\n" + "\n".join(bad)


def test_the_project_helpers_import_neither_app():
    helpers = [p for p in sorted((ROOT / "registry_site").glob("*.py")) if p.name not in PROJECT_WIRING]
    assert helpers, "no project helpers found"
    bad = offending(helpers, ("submissions",)) + [
        f"{p.relative_to(ROOT)}:{line}: imports {m}" for p in helpers for line, m in imports_of(p)
        if m.startswith("registry_site.catalogue")]
    assert not bad, "a project helper imports an app:\n" + "\n".join(bad)


def test_the_rule_sees_a_lazy_import(tmp_path):
    sample = tmp_path / "x.py"
    sample.write_text("def f():\n    from submissions.review import approve\n")
    assert imports_of(sample) == [(2, "submissions.review")]
