"""`benchpack --help` and `benchpack list` answer at once because building the parser imports none
of the heavy modules (the timing itself is bench/cli_startup.py, not a functional test)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("benchpack.run.runner", "httpx", "numpy", "jsonschema", "rich", "psutil", "aiohttp",
         "benchpack.reporting.report", "benchpack.refserver.server")

PROBE = """
import json, sys
from benchpack.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [["--help"], ["list"], ["list", "--all"], ["run", "--help"], ["compare", "--help"]])
def test_the_parser_and_list_import_nothing_heavy(argv):
    done = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)],
                          capture_output=True, text=True, check=True)
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert loaded == [], f"`benchpack {' '.join(argv)}` imported {loaded}"
    assert done.stdout.strip()


def test_the_run_parsers_choices_are_the_runners():
    from benchpack.commands import run as command
    from benchpack.run import runner
    from benchpack.packs import prompt_cache

    assert command.OPENAI_STREAM_USAGE == runner.OPENAI_STREAM_USAGE
    assert command.POLICIES == prompt_cache.POLICIES


def test_list_shows_what_the_full_loader_reads():
    """The fast catalogue (tomllib only) agrees with the loader on every bundled pack version."""
    from benchpack.packs.catalogue import pack_versions
    from benchpack.packs.loader import load_pack

    for entry in pack_versions():
        pack = load_pack(entry.path)
        assert (entry.id, entry.version, entry.description) == (pack.id, pack.version, pack.description)
        assert entry.case_kinds == tuple(c.kind for c in pack.cases)


def test_a_named_command_builds_only_its_own_parser():
    probe = ("import sys\nfrom benchpack.cli import main\ntry:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('benchpack.commands.')), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stderr.strip().splitlines()[-1] == "['benchpack.commands.run']"


def test_every_command_module_registers_the_command_it_is_named_after():
    import argparse

    from benchpack.cli import COMMANDS, build_parser

    for name in COMMANDS:
        parser = build_parser(name)
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        assert list(subparsers.choices) == [name]
    assert set(build_parser()._subparsers._group_actions[0].choices) == set(COMMANDS)


@pytest.mark.parametrize("argv", [["run", "--help"], ["registry", "--help"], ["compare", "--help"]])
def test_a_commands_help_is_the_same_from_its_own_parser_and_the_whole_one(argv, capsys):
    from benchpack.cli import build_parser

    texts = []
    for parser in (build_parser(argv[0]), build_parser()):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1] and texts[0]


# The process's own entry (the console script, `python -m benchpack`, `-m benchpack.cli`): main's status, and
# the objects the command left frozen before the interpreter's exit collection (docs/measurement.md, "Issue 34
# item 2: stop 40"). Read from an exit handler: they run after SystemExit, before that collection.
EXIT_PROBE = """
import atexit, gc, sys
atexit.register(lambda: print("frozen", gc.get_freeze_count(), file=sys.stderr))
sys.argv = ["benchpack", *{argv!r}]
{entry}
"""


@pytest.mark.parametrize("entry", ["from benchpack.cli import run_process\nrun_process()", "import benchpack.__main__"])
@pytest.mark.parametrize(("argv", "status"), [
    (["list"], 0),
    (["run", "/nonexistent/pack", "--adapter", "openai-chat", "--model", "m", "--endpoint", "http://127.0.0.1:9"], 2),
])
def test_the_process_entry_exits_with_mains_status_and_its_objects_frozen(entry, argv, status):
    done = subprocess.run([sys.executable, "-c", EXIT_PROBE.format(argv=argv, entry=entry)],
                          capture_output=True, text=True)
    assert done.returncode == status, done.stderr[-2000:]
    frozen = int(done.stderr.rsplit("frozen ", 1)[1].split()[0])
    assert frozen > 1000, done.stderr[-2000:]  # the modules' objects, at least (tens of thousands in a run)
    if argv == ["list"]:
        assert done.stdout.strip()


def test_the_console_script_is_the_process_entry():
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"]["benchpack"] == "benchpack.cli:run_process"
