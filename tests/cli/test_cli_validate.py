from __future__ import annotations

from pathlib import Path

import pytest

from benchpack.cli import main
from benchpack.packs.loader import bundled_packs_dir

HEAD = '[pack]\nid = "p"\nversion = "2.0"\n'
CASE = '[[cases]]\nid = "{id}"\nprompt = "x"\n'


def write(root: Path, manifest: str, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True)
    (root / "benchpack.toml").write_text(manifest)
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes() if p.is_file() else b"") for p in root.rglob("*")}


def test_it_prints_ok_with_id_version_and_case_count(tmp_path, capsys):
    root = write(tmp_path / "p", HEAD + CASE.format(id="a") + CASE.format(id="b"))
    assert main(["validate", str(root)]) == 0
    out = capsys.readouterr()
    assert out.out == "ok: p 2.0 (2 cases)\n"
    assert out.err == ""


def test_it_validates_a_bundled_pack_by_id(capsys):
    assert main(["validate", "smoke-chat"]) == 0
    assert capsys.readouterr().out == "ok: smoke-chat 0.1.0 (1 cases)\n"


def test_it_prints_one_line_per_problem_and_exits_2(tmp_path, capsys):
    root = write(
        tmp_path / "p",
        HEAD + CASE.format(id="a") + CASE.format(id="a") + '[[cases]]\nid = "c"\nprompt_file = "../x.md"\n',
    )
    assert main(["validate", str(root)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.splitlines() == [
        "benchpack.toml: cases[1].id: duplicate case id 'a' (also cases[0])",
        "benchpack.toml: cases[2].prompt_file: escapes the pack directory",
    ]


def test_it_reports_toml_syntax_errors_without_a_traceback(tmp_path, capsys):
    root = write(tmp_path / "p", '[pack\nid = "p"\n')
    assert main(["validate", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("benchpack.toml: line 1, column ")
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_it_reports_a_missing_pack(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope")]) == 2
    assert "no such pack directory or bundled pack id" in capsys.readouterr().err


def test_it_turns_unreadable_files_into_a_problem_line(tmp_path, capsys, monkeypatch):
    root = write(tmp_path / "p", HEAD + CASE.format(id="a"))
    real_read_bytes = Path.read_bytes

    def deny(path: Path) -> bytes:
        if path.name == "benchpack.toml":
            raise PermissionError(13, "Permission denied")
        return real_read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", deny)
    assert main(["validate", str(root)]) == 2
    assert capsys.readouterr().err == f"{root}: cannot be read: Permission denied\n"


def test_it_writes_nothing(tmp_path, capsys):
    root = write(
        tmp_path / "p",
        HEAD
        + '[[cases]]\nid = "a"\nprompt_file = "prompts/a.md"\nfixture_refs = ["ctx"]\n'
        + '[[fixtures]]\nid = "ctx"\nkind = "context"\npath = "fixtures/ctx.md"\n'
        + '[scoring]\nmode = "json-schema"\nschema = "schema.json"\n',
        {"prompts/a.md": "a", "fixtures/ctx.md": "c", "schema.json": "{}"},
    )
    before = snapshot(tmp_path)
    assert main(["validate", str(root)]) == 0
    assert snapshot(tmp_path) == before


def test_it_warns_that_llm_judge_packs_will_not_run(tmp_path, capsys):
    root = write(tmp_path / "p", HEAD + CASE.format(id="a") + '[scoring]\nmode = "llm-judge"\n')
    assert main(["validate", str(root)]) == 0
    out = capsys.readouterr()
    assert out.out == "ok: p 2.0 (1 cases)\n"
    assert out.err.startswith("warning: benchpack.toml: scoring.mode: llm-judge scoring is reserved")


@pytest.mark.parametrize("pack_id", sorted(p.parent.name for p in bundled_packs_dir().glob("*/benchpack.toml")))
def test_it_validates_every_bundled_pack(pack_id, capsys):
    assert main(["validate", pack_id]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith(f"ok: {pack_id} ")
