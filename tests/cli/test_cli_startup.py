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
