"""The CLI's small promises: `list`, a typo'd pack id, a reader that goes away,
`refserver` as a verb, help texts a user can read."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import httpx
import pytest

from benchpack import cli
from tests.data_paths import REAL_RESULTS

OUTSIDE = ".." + "/shared"  # the design material beside the repository, which users do not have


def test_list_shows_every_bundled_pack_on_one_line_each(capsys):
    from benchpack.packs.loader import bundled_packs_dir, load_pack

    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    packs = [load_pack(p.parent) for p in sorted(bundled_packs_dir().glob("*/benchpack.toml"))]
    assert len(lines) == len(packs)
    for line, pack in zip(lines, packs):
        assert line.startswith(f"{pack.id} {pack.version}") and len(line) <= 100


def test_a_typod_pack_id_suggests_the_nearest(capsys):
    assert cli.main(["validate", "runtme-sweep"]) == 2
    assert "did you mean 'runtime-sweep'?" in capsys.readouterr().err


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(tmp_path):
    # `benchpack registry query … | head -1`: enough records to fill the pipe.
    runs = []
    for i in range(12):
        for source in REAL_RESULTS.iterdir():
            target = tmp_path / "runs" / f"{source.name}-{i}"
            shutil.copytree(source, target)
            runs.append(str(target))
    db = tmp_path / "registry.sqlite3"
    assert cli.main(["registry", "import", "--db", str(db), *runs]) == 0
    query = subprocess.Popen([sys.executable, "-m", "benchpack", "registry", "query", "--db", str(db), "--raw",
                              "--limit", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    query.stdout.readline()
    query.stdout.close()  # what `head -1` does after its line
    stderr = query.stderr.read().decode()
    assert query.wait(timeout=60) == 141
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_refserver_is_a_verb_that_serves_until_stopped(tmp_path):
    with socket_port() as port:
        pass
    server = subprocess.Popen([sys.executable, "-m", "benchpack", "refserver", "--port", str(port), "--like",
                               "llama-server"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert f"listening on http://127.0.0.1:{port}" in server.stdout.readline()
        reply = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=10,
                           json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert reply.status_code == 200 and reply.json()["model"] == "refserver-model"
        assert httpx.get(f"http://127.0.0.1:{port}/props", timeout=10).json()["total_slots"] == 1
    finally:
        server.terminate()
        server.wait(timeout=10)


def socket_port():
    import contextlib
    import socket

    @contextlib.contextmanager
    def free():
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            yield sock.getsockname()[1]
    return free()


def help_texts() -> list[str]:
    parser = cli.build_parser()
    texts = []

    def walk(p):
        texts.append(p.format_help())
        for action in p._actions:
            if hasattr(action, "choices") and isinstance(action.choices, dict):
                for sub in action.choices.values():
                    walk(sub)
    walk(parser)
    return texts


def test_no_help_text_names_a_decision_by_number_or_points_outside_the_repository():
    import re

    for text in help_texts():
        assert not re.search(r"\bD-\d{3}\b", text), text
        assert OUTSIDE not in text


def test_every_registry_option_has_help_text():
    parser = cli.build_parser()
    registry = next(a for a in parser._actions if isinstance(getattr(a, "choices", None), dict)).choices["registry"]
    subcommands = next(a for a in registry._actions if isinstance(getattr(a, "choices", None), dict)).choices
    for name, sub in subcommands.items():
        for action in sub._actions:
            if action.option_strings and action.dest != "help" and not isinstance(action.choices, dict):
                assert action.help, f"registry {name} {action.option_strings[0]} has no help"


def test_the_readme_points_into_docs_and_names_no_decision_by_bare_number():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    assert OUTSIDE not in readme and not re.search(r"\bD-\d{3}\b", readme)
    for doc in re.findall(r"`(docs/[\w.-]+\.md)`", readme):
        assert (root / doc).is_file(), doc
    assert (root / "docs" / "format.md").is_file() and (root / "docs" / "decisions.md").is_file()
