"""Loader rules from the format spec: each test writes a tiny pack and checks
one rule, reading the problem lines the user would see."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from benchpack.errors import PackError
from benchpack.packs.loader import bundled_packs_dir, load_pack, resolve_pack_path

PACK_HEAD = """
[pack]
id = "p"
version = "1.0.0"
"""
CHAT_CASE = """
[[cases]]
id = "c"
kind = "chat"
prompt = "hello"
"""
REPO_FIXTURE = """
[[fixtures]]
id = "repo"
kind = "repo"
path = "fixtures/repo"
"""


def write_pack(root: Path, manifest: str, files: dict[str, str | bytes] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "benchpack.toml").write_text(textwrap.dedent(manifest))
    for rel, content in (files or {}).items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    return root


def problems(root: Path) -> list[str]:
    with pytest.raises(PackError) as info:
        load_pack(root)
    return info.value.lines()


def only_problem(root: Path) -> str:
    lines = problems(root)
    assert len(lines) == 1, lines
    return lines[0]


def repo_files() -> dict[str, str]:
    return {"fixtures/repo/app.py": "print('hi')\n"}


# -- basics -------------------------------------------------------------------


def test_it_loads_a_minimal_pack_with_defaults_filled_in(tmp_path):
    pack = load_pack(write_pack(tmp_path / "p", PACK_HEAD + CHAT_CASE))
    assert (pack.id, pack.version, pack.description) == ("p", "1.0.0", "")
    assert pack.defaults.stream is False
    assert (pack.defaults.warmup, pack.defaults.repetitions) == (0, 1)
    assert pack.defaults.temperature is None and pack.defaults.max_tokens is None
    assert pack.cases[0].prompt == "hello"
    assert pack.cases[0].fixture_refs == ()
    assert pack.scoring is None and pack.cases[0].scoring is None
    assert pack.root == (tmp_path / "p").resolve()
    assert pack.manifest_path == (tmp_path / "p" / "benchpack.toml").resolve()


def test_it_accepts_the_manifest_file_path_as_well_as_the_directory(tmp_path):
    root = write_pack(tmp_path / "p", PACK_HEAD + CHAT_CASE)
    assert load_pack(root / "benchpack.toml").id == "p"


def test_it_reports_a_missing_manifest(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(PackError) as info:
        load_pack(tmp_path / "empty")
    assert "no benchpack.toml" in info.value.lines()[0]
    with pytest.raises(PackError):
        load_pack(tmp_path / "missing")


def test_it_reports_toml_syntax_errors_with_the_line(tmp_path):
    root = write_pack(tmp_path / "p", '[pack]\nid = "p"\nversion = \n')
    line = only_problem(root)
    assert line.startswith("benchpack.toml: line 3, column ")
    assert "invalid TOML" in line


def test_it_requires_pack_id_and_version(tmp_path):
    root = write_pack(tmp_path / "p", "[pack]\n" + CHAT_CASE)
    assert problems(root) == [
        "benchpack.toml: pack.id: is required",
        "benchpack.toml: pack.version: is required and must be a non-empty string",
    ]


def test_it_collects_every_problem_with_indexed_field_paths(tmp_path):
    root = write_pack(
        tmp_path / "p",
        PACK_HEAD
        + """
        [defaults]
        repetitions = 0

        [[cases]]
        id = "ok"
        prompt = "x"

        [[cases]]
        id = "bad.id"
        prompt = "x"

        [[cases]]
        id = "third"
        prompt_file = "../outside.md"
        """,
    )
    assert problems(root) == [
        "benchpack.toml: defaults.repetitions: must be an integer >= 1, got 0",
        "benchpack.toml: cases[1].id: 'bad.id' is not a valid id (must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$)",
        "benchpack.toml: cases[2].prompt_file: escapes the pack directory",
    ]


# -- ids ----------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "-lead", "_lead", "has.dot", "has/slash", "has space", "tail\n"])
def test_it_rejects_ids_outside_the_grammar(tmp_path, bad):
    root = write_pack(tmp_path / "p", f"[pack]\nid = {tomlstr(bad)}\nversion = \"1\"\n" + CHAT_CASE)
    assert only_problem(root) == (
        f"benchpack.toml: pack.id: {bad!r} is not a valid id (must match ^[A-Za-z0-9][A-Za-z0-9_-]{{0,127}}$)"
    )


def tomlstr(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def test_it_accepts_ids_with_underscores_and_hyphens(tmp_path):
    root = write_pack(tmp_path / "p", '[pack]\nid = "A1_b-c"\nversion = "1"\n' + CHAT_CASE)
    assert load_pack(root).id == "A1_b-c"


def test_it_rejects_duplicate_case_ids(tmp_path):
    root = write_pack(tmp_path / "p", PACK_HEAD + CHAT_CASE + CHAT_CASE)
    assert only_problem(root) == "benchpack.toml: cases[1].id: duplicate case id 'c' (also cases[0])"


def test_it_rejects_invalid_and_duplicate_fixture_ids(tmp_path):
    fixture = '\n[[fixtures]]\nid = "{id}"\nkind = "context"\npath = "f.md"\n'
    root = write_pack(
        tmp_path / "p",
        PACK_HEAD + CHAT_CASE + fixture.format(id="f") + fixture.format(id="f") + fixture.format(id="f.x"),
        {"f.md": "x"},
    )
    assert problems(root) == [
        "benchpack.toml: fixtures[1].id: duplicate fixture id 'f' (also fixtures[0])",
        "benchpack.toml: fixtures[2].id: 'f.x' is not a valid id (must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$)",
    ]


def test_it_requires_at_least_one_case(tmp_path):
    assert only_problem(write_pack(tmp_path / "p", PACK_HEAD)) == (
        "benchpack.toml: cases: at least one [[cases]] entry is required"
    )


# -- case kinds and prompt sources ----------------------------------------------


def test_it_rejects_unknown_case_kinds_and_accepts_the_four_known_ones(tmp_path):
    for kind in ("chat", "completion", "replay"):
        root = write_pack(tmp_path / kind, PACK_HEAD + CHAT_CASE.replace('"chat"', f'"{kind}"'))
        assert load_pack(root).cases[0].kind == kind
    root = write_pack(tmp_path / "bad", PACK_HEAD + CHAT_CASE.replace('"chat"', '"agentic"'))
    assert "cases[0].kind: unknown case kind 'agentic'" in only_problem(root)


def test_it_defaults_a_missing_case_kind_to_chat(tmp_path):
    root = write_pack(tmp_path / "p", PACK_HEAD + '[[cases]]\nid = "c"\nprompt = "x"\n')
    assert load_pack(root).cases[0].kind == "chat"


def test_it_requires_exactly_one_prompt_source(tmp_path):
    both = write_pack(
        tmp_path / "both", PACK_HEAD + '[[cases]]\nid = "c"\nprompt = "x"\nprompt_file = "p.md"\n', {"p.md": "y"}
    )
    assert only_problem(both) == "benchpack.toml: cases[0]: needs exactly one of prompt or prompt_file (has both)"
    neither = write_pack(tmp_path / "neither", PACK_HEAD + '[[cases]]\nid = "c"\n')
    assert only_problem(neither) == "benchpack.toml: cases[0]: needs exactly one of prompt or prompt_file (has neither)"


def test_it_loads_prompt_files_as_the_case_prompt(tmp_path):
    root = write_pack(
        tmp_path / "p",
        PACK_HEAD + '[[cases]]\nid = "c"\nprompt_file = "prompts/c.md"\n',
        {"prompts/c.md": "Plan the wrap.\r\nThen stop.\n"},
    )
    case = load_pack(root).cases[0]
    assert case.prompt == "Plan the wrap.\nThen stop.\n"
    assert case.prompt_file == "prompts/c.md"
    assert case.raw == {"id": "c", "prompt_file": "prompts/c.md"}


def test_it_rejects_non_utf8_prompt_files(tmp_path):
    root = write_pack(
        tmp_path / "p", PACK_HEAD + '[[cases]]\nid = "c"\nprompt_file = "p.md"\n', {"p.md": b"caf\xe9\n"}
    )
    assert only_problem(root) == "benchpack.toml: cases[0].prompt_file: is not valid UTF-8 text (byte offset 3)"


@pytest.mark.parametrize(
    "value, reason",
    [
        ("/etc/passwd", "'/etc/passwd' is an absolute path; use a path relative to the pack directory"),
        ("../x.md", "escapes the pack directory"),
        ("prompts/../../x.md", "escapes the pack directory"),
        ("missing.md", "'missing.md' does not exist"),
        ("prompts", "'prompts' is not a file"),
    ],
)
def test_it_rejects_prompt_files_outside_missing_or_not_files(tmp_path, value, reason):
    (tmp_path / "x.md").write_text("outside")
    root = write_pack(
        tmp_path / "p", PACK_HEAD + f'[[cases]]\nid = "c"\nprompt_file = "{value}"\n', {"prompts/a.md": "a"}
    )
    assert only_problem(root) == f"benchpack.toml: cases[0].prompt_file: {reason}"


def test_it_allows_dotdot_that_stays_inside_the_pack(tmp_path):
    root = write_pack(
        tmp_path / "p", PACK_HEAD + '[[cases]]\nid = "c"\nprompt_file = "prompts/../a.md"\n', {"a.md": "inside"}
    )
    assert load_pack(root).cases[0].prompt == "inside"


def test_it_rejects_prompt_files_that_escape_through_a_symlink(tmp_path):
    (tmp_path / "secret.md").write_text("outside")
    root = write_pack(tmp_path / "p", PACK_HEAD + '[[cases]]\nid = "c"\nprompt_file = "link.md"\n')
    os.symlink(tmp_path / "secret.md", root / "link.md")
    assert only_problem(root) == "benchpack.toml: cases[0].prompt_file: escapes the pack directory through a symlink"


def test_it_rejects_a_symlinked_directory_that_leads_outside(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.md").write_text("outside")
    root = write_pack(tmp_path / "p", PACK_HEAD + '[[cases]]\nid = "c"\nprompt_file = "prompts/a.md"\n')
    os.symlink(tmp_path / "elsewhere", root / "prompts")
    assert "escapes the pack directory through a symlink" in only_problem(root)


def test_it_follows_symlinks_that_stay_inside_the_pack(tmp_path):
    root = write_pack(
        tmp_path / "p", PACK_HEAD + '[[cases]]\nid = "c"\nprompt_file = "link.md"\n', {"real.md": "real"}
    )
    os.symlink("real.md", root / "link.md")
    assert load_pack(root).cases[0].prompt == "real"


# -- fixtures and prompt assembly ---------------------------------------------


def test_it_appends_referenced_file_fixtures_in_ref_order_with_stable_delimiters(tmp_path):
    manifest = (
        PACK_HEAD
        + """
        [[cases]]
        id = "c"
        prompt = "Base prompt."
        fixture_refs = ["b", "a", "repo"]

        [[fixtures]]
        id = "a"
        kind = "context"
        path = "fixtures/a.md"
        description = "first"

        [[fixtures]]
        id = "b"
        kind = "notes"
        path = "fixtures/b.txt"
        """
        + REPO_FIXTURE
    )
    root = write_pack(
        tmp_path / "p", manifest, {"fixtures/a.md": "alpha\n", "fixtures/b.txt": "beta", **repo_files()}
    )
    pack = load_pack(root)
    assert pack.cases[0].prompt == (
        "Base prompt."
        "\n\n--- BEGIN FIXTURE b (notes, fixtures/b.txt) ---\nbeta\n--- END FIXTURE b ---"
        "\n\n--- BEGIN FIXTURE a (context, fixtures/a.md) ---\nalpha\n--- END FIXTURE a ---"
    )
    assert pack.cases[0].fixture_refs == ("b", "a", "repo")
    assert pack.cases[0].raw["fixture_refs"] == ["b", "a", "repo"]
    assert pack.fixture("a").description == "first"
    assert pack.fixture("b").description == ""
    repo = pack.fixture("repo")
    assert repo.is_dir and repo.resolved == (root / "fixtures/repo").resolve() and repo.path == "fixtures/repo"
    assert pack.repo_fixture(pack.cases[0]) is None  # chat cases never get a workspace


def test_it_keeps_directory_fixtures_metadata_only(tmp_path):
    manifest = PACK_HEAD + CHAT_CASE.replace('prompt = "hello"', 'prompt = "hello"\nfixture_refs = ["repo"]')
    root = write_pack(tmp_path / "p", manifest + REPO_FIXTURE, repo_files())
    assert load_pack(root).cases[0].prompt == "hello"


def test_it_leaves_unreferenced_fixtures_out_of_prompts(tmp_path):
    fixture = '[[fixtures]]\nid = "f"\nkind = "context"\npath = "f.md"\n'
    root = write_pack(tmp_path / "p", PACK_HEAD + CHAT_CASE + fixture, {"f.md": "ctx"})
    pack = load_pack(root)
    assert pack.cases[0].prompt == "hello"
    assert [f.id for f in pack.fixtures] == ["f"]


@pytest.mark.parametrize(
    "entry, field, reason",
    [
        ('id = "f"\npath = "f.md"', "fixtures[0].kind", "is required and must be a non-empty string"),
        ('id = "f"\nkind = "  "\npath = "f.md"', "fixtures[0].kind", "is required and must be a non-empty string"),
        ('id = "f"\nkind = "context"', "fixtures[0].path", "must be a non-empty string path relative to the pack directory"),
        ('id = "f"\nkind = "context"\npath = 3', "fixtures[0].path", "must be a non-empty string path relative to the pack directory"),
        ('id = "f"\nkind = "context"\npath = "."', "fixtures[0].path", "must not be the pack directory itself"),
        ('id = "f"\nkind = "context"\npath = "sub/.."', "fixtures[0].path", "must not be the pack directory itself"),
        ('id = "f"\nkind = "context"\npath = "nope.md"', "fixtures[0].path", "'nope.md' does not exist"),
        ('id = "f"\nkind = "context"\npath = "../x"', "fixtures[0].path", "escapes the pack directory"),
        ('id = "f"\nkind = "context"\npath = "/tmp"', "fixtures[0].path", "'/tmp' is an absolute path; use a path relative to the pack directory"),
        ('id = "f"\nkind = "context"\npath = "f.md"\ndescription = 1', "fixtures[0].description", "must be a string"),
    ],
)
def test_it_validates_fixture_declarations(tmp_path, entry, field, reason):
    root = write_pack(tmp_path / "p", PACK_HEAD + CHAT_CASE + "[[fixtures]]\n" + entry + "\n", {"f.md": "x", "sub/a": "a"})
    assert only_problem(root) == f"benchpack.toml: {field}: {reason}"


def test_it_rejects_fixture_paths_that_escape_through_a_symlink(tmp_path):
    (tmp_path / "outside").mkdir()
    root = write_pack(tmp_path / "p", PACK_HEAD + CHAT_CASE + '[[fixtures]]\nid = "f"\nkind = "repo"\npath = "repo"\n')
    os.symlink(tmp_path / "outside", root / "repo")
    assert only_problem(root) == "benchpack.toml: fixtures[0].path: escapes the pack directory through a symlink"


def test_it_rejects_fixture_paths_that_are_neither_file_nor_directory(tmp_path):
    root = write_pack(tmp_path / "p", PACK_HEAD + CHAT_CASE + '[[fixtures]]\nid = "f"\nkind = "x"\npath = "fifo"\n')
    os.mkfifo(root / "fifo")
    assert only_problem(root) == "benchpack.toml: fixtures[0].path: 'fifo' is neither a file nor a directory"


@pytest.mark.parametrize(
    "refs, field, reason",
    [
        ('"f"', "cases[0].fixture_refs", "must be an array of fixture ids"),
        ("[1]", "cases[0].fixture_refs[0]", "must be a string fixture id, got 1"),
        ('["f.x"]', "cases[0].fixture_refs[0]", "'f.x' is not a valid id (must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$)"),
        ('["f", "f"]', "cases[0].fixture_refs[1]", "duplicate fixture ref 'f'"),
        ('["g"]', "cases[0].fixture_refs[0]", "unknown fixture 'g' (not declared in [[fixtures]])"),
    ],
)
def test_it_validates_fixture_refs(tmp_path, refs, field, reason):
    manifest = PACK_HEAD + f'[[cases]]\nid = "c"\nprompt = "x"\nfixture_refs = {refs}\n'
    manifest += '[[fixtures]]\nid = "f"\nkind = "context"\npath = "f.md"\n'
    root = write_pack(tmp_path / "p", manifest, {"f.md": "x"})
    assert only_problem(root) == f"benchpack.toml: {field}: {reason}"


def test_it_accepts_fixtures_declared_after_the_cases_that_reference_them(tmp_path):
    manifest = PACK_HEAD + '[[cases]]\nid = "c"\nprompt = "x"\nfixture_refs = ["f"]\n'
    manifest += '[[fixtures]]\nid = "f"\nkind = "context"\npath = "f.md"\n'
    assert "BEGIN FIXTURE f" in load_pack(write_pack(tmp_path / "p", manifest, {"f.md": "y"})).cases[0].prompt


def test_it_rejects_referenced_file_fixtures_that_are_not_utf8_once(tmp_path):
    manifest = PACK_HEAD + '[[cases]]\nid = "c"\nprompt = "x"\nfixture_refs = ["f"]\n'
    manifest += '[[cases]]\nid = "d"\nprompt = "x"\nfixture_refs = ["f"]\n'
    manifest += '[[fixtures]]\nid = "f"\nkind = "context"\npath = "f.md"\n'
    root = write_pack(tmp_path / "p", manifest, {"f.md": b"\xff\xfe"})
    assert only_problem(root) == "benchpack.toml: fixtures[0].path: is not valid UTF-8 text (byte offset 0)"


# -- defaults -----------------------------------------------------------------


def test_it_loads_defaults(tmp_path):
    defaults = "[defaults]\ntemperature = 0\nmax_tokens = 64\nstream = true\nwarmup = 2\nrepetitions = 3\n"
    pack = load_pack(write_pack(tmp_path / "p", PACK_HEAD + defaults + CHAT_CASE))
    assert pack.defaults.temperature == 0.0 and isinstance(pack.defaults.temperature, float)
    assert (pack.defaults.max_tokens, pack.defaults.stream, pack.defaults.warmup, pack.defaults.repetitions) == (
        64,
        True,
        2,
        3,
    )


@pytest.mark.parametrize(
    "line, reason",
    [
        ("warmup = -1", "defaults.warmup: must be an integer >= 0, got -1"),
        ("warmup = true", "defaults.warmup: must be an integer >= 0, got True"),
        ("warmup = 1.0", "defaults.warmup: must be an integer >= 0, got 1.0"),
        ("repetitions = 0", "defaults.repetitions: must be an integer >= 1, got 0"),
        ("repetitions = true", "defaults.repetitions: must be an integer >= 1, got True"),
        ("stream = 1", "defaults.stream: must be true or false, got 1"),
        ("stream = \"yes\"", "defaults.stream: must be true or false, got 'yes'"),
        ("temperature = true", "defaults.temperature: must be a number >= 0, got True"),
        ("temperature = \"0\"", "defaults.temperature: must be a number >= 0, got '0'"),
        ("max_tokens = 0", "defaults.max_tokens: must be a positive integer, got 0"),
        ("max_tokens = true", "defaults.max_tokens: must be a positive integer, got True"),
        ("max_tokens = 12.5", "defaults.max_tokens: must be a positive integer, got 12.5"),
    ],
)
def test_it_validates_defaults(tmp_path, line, reason):
    root = write_pack(tmp_path / "p", PACK_HEAD + "[defaults]\n" + line + "\n" + CHAT_CASE)
    assert only_problem(root) == f"benchpack.toml: {reason}"


# -- scoring ------------------------------------------------------------------


def test_it_uses_the_case_scoring_override_else_the_pack_default(tmp_path):
    manifest = PACK_HEAD + """
    [scoring]
    mode = "contains"
    expected = "Paris"

    [[cases]]
    id = "inherits"
    prompt = "x"

    [[cases]]
    id = "overrides"
    prompt = "x"
    scoring = { mode = "regex", pattern = "^a+$" }
    """
    pack = load_pack(write_pack(tmp_path / "p", manifest))
    inherits, overrides = pack.cases
    assert inherits.scoring == pack.scoring and inherits.scoring.expected == "Paris"
    assert overrides.scoring.mode == "regex" and overrides.scoring.pattern == "^a+$"
    assert overrides.scoring.expected is None
    assert overrides.raw["scoring"] == {"mode": "regex", "pattern": "^a+$"}


@pytest.mark.parametrize(
    "table, reason",
    [
        ('mode = "fuzzy"', "scoring.mode: unknown scoring mode 'fuzzy' (expected one of none, contains, regex, json-schema, equals, verify-script, llm-judge, tool-call)"),
        ('expected = "x"', "scoring.mode: is required"),
        ('mode = "contains"', "scoring.expected: is required for mode 'contains' and must be a string"),
        ('mode = "contains"\nexpected = 3', "scoring.expected: is required for mode 'contains' and must be a string"),
        ('mode = "equals"', "scoring.expected: is required for mode 'equals' and must be a string"),
        ('mode = "regex"', "scoring.pattern: is required for mode 'regex' and must be a string"),
        ('mode = "regex"\npattern = "("', "scoring.pattern: is not a valid regular expression: missing ), unterminated subpattern at position 0"),
        ('mode = "contains"\nexpected = "x"\ntimeout_s = 5', 'scoring.timeout_s: is only allowed with mode = "verify-script"'),
        ('mode = "json-schema"', "scoring.schema: must be a non-empty string path relative to the pack directory"),
        ('mode = "json-schema"\nschema = "../s.json"', "scoring.schema: escapes the pack directory"),
        ('mode = "json-schema"\nschema = "/s.json"', "scoring.schema: '/s.json' is an absolute path; use a path relative to the pack directory"),
        ('mode = "json-schema"\nschema = "none.json"', "scoring.schema: 'none.json' does not exist"),
        ('mode = "json-schema"\nschema = "bad.json"', "scoring.schema: 'bad.json' is not valid JSON: Expecting value (line 1, column 1)"),
        ('mode = "json-schema"\nschema = "list.json"', "scoring.schema: 'list.json' must contain a JSON object"),
        ('mode = "json-schema"\nschema = "typo.json"', "scoring.schema: 'typo.json' is not a valid JSON schema: 'strnig' is not valid under any of the given schemas"),
    ],
)
def test_it_validates_pack_level_scoring(tmp_path, table, reason):
    files = {"bad.json": "nope", "list.json": "[]", "typo.json": '{"type": "strnig"}'}
    root = write_pack(tmp_path / "p", PACK_HEAD + CHAT_CASE + "[scoring]\n" + table + "\n", files)
    assert only_problem(root) == f"benchpack.toml: {reason}"


def test_it_reports_case_level_scoring_problems_under_the_case(tmp_path):
    manifest = PACK_HEAD + '[[cases]]\nid = "c"\nprompt = "x"\nscoring = { mode = "regex", pattern = "[" }\n'
    assert only_problem(write_pack(tmp_path / "p", manifest)).startswith(
        "benchpack.toml: cases[0].scoring.pattern: is not a valid regular expression"
    )


def test_it_loads_json_schema_files_at_load_time(tmp_path):
    manifest = PACK_HEAD + CHAT_CASE + '[scoring]\nmode = "json-schema"\nschema = "schemas/s.json"\n'
    pack = load_pack(write_pack(tmp_path / "p", manifest, {"schemas/s.json": '{"type": "object"}'}))
    assert pack.scoring.schema == {"type": "object"}
    assert pack.scoring.schema_path == "schemas/s.json"


def test_it_parses_reserved_llm_judge_mode(tmp_path):
    manifest = PACK_HEAD + CHAT_CASE + '[scoring]\nmode = "llm-judge"\nrubric = "r"\n'
    pack = load_pack(write_pack(tmp_path / "p", manifest))
    assert pack.scoring.mode == "llm-judge" and pack.scoring.raw["rubric"] == "r"


# -- repo-task ------------------------------------------------------------------

REPO_CASE = """
[[cases]]
id = "fix"
kind = "repo-task"
prompt = "fix it"
fixture_refs = {refs}
{extra}
"""


def repo_pack(tmp_path: Path, refs: str = '["repo"]', extra: str = "", more: str = "", files=None) -> Path:
    manifest = PACK_HEAD + REPO_CASE.format(refs=refs, extra=extra) + REPO_FIXTURE + more
    return write_pack(tmp_path / "p", manifest, {**repo_files(), "verify/check.py": "", **(files or {})})


VERIFY = 'scoring = {{ mode = "verify-script", script = "verify/check.py"{more} }}'


def test_a_prompt_file_ending_in_a_newline_is_followed_by_exactly_one_blank_line(tmp_path):
    # The seed format's bytes: "<prompt file>\n--- BEGIN…" when the file ends
    # in a newline (one blank line), "<prompt>\n\n--- BEGIN…" when it does not.
    manifest = """
        [pack]
        id = "p"
        version = "1"

        [[fixtures]]
        id = "ctx"
        kind = "context"
        path = "ctx.md"

        [[cases]]
        id = "from-file"
        prompt_file = "prompt.md"
        fixture_refs = ["ctx"]

        [[cases]]
        id = "inline"
        prompt = "Inline."
        fixture_refs = ["ctx"]
        """
    pack = load_pack(write_pack(tmp_path / "p", manifest, {"prompt.md": "Line one.\nLine two.\n", "ctx.md": "C\n"}))
    block = "--- BEGIN FIXTURE ctx (context, ctx.md) ---\nC\n--- END FIXTURE ctx ---"
    assert pack.cases[0].prompt == "Line one.\nLine two.\n\n" + block
    assert pack.cases[1].prompt == "Inline.\n\n" + block


def test_it_loads_a_repo_task_with_verify_script_and_harness(tmp_path):
    extra = (
        'harness = { id = "external-agent", timeout_s = 5 }\n'
        + VERIFY.format(more=', timeout_s = 30, environment = { PYTHONPATH = "src", EMPTY = "" }')
    )
    pack = load_pack(repo_pack(tmp_path, '["repo", "ctx"]', extra, '[[fixtures]]\nid = "ctx"\nkind = "context"\npath = "c.md"\n', {"c.md": "C"}))
    case = pack.cases[0]
    assert pack.repo_fixture(case).id == "repo"
    assert case.harness.id == "external-agent" and case.harness.timeout_s == 5.0
    assert case.scoring.script == "verify/check.py"
    assert case.scoring.script_resolved == (pack.root / "verify/check.py")
    assert case.scoring.timeout_s == 30.0
    assert case.scoring.environment == {"PYTHONPATH": "src", "EMPTY": ""}
    assert case.prompt.endswith("--- BEGIN FIXTURE ctx (context, c.md) ---\nC\n--- END FIXTURE ctx ---")


def test_it_leaves_verifier_timeout_unset_when_absent(tmp_path):
    case = load_pack(repo_pack(tmp_path, extra=VERIFY.format(more=""))).cases[0]
    assert case.scoring.timeout_s is None and case.scoring.environment is None and case.harness is None


@pytest.mark.parametrize(
    "refs, more, reason",
    [
        ("[]", "", 'repo-task cases need exactly one kind = "repo" directory fixture (found: none)'),
        ('["repo", "repo2"]', '[[fixtures]]\nid = "repo2"\nkind = "repo"\npath = "fixtures/repo"\n',
         'repo-task cases need exactly one kind = "repo" directory fixture (found: repo, repo2)'),
        ('["repo", "dir"]', '[[fixtures]]\nid = "dir"\nkind = "data"\npath = "fixtures/repo"\n',
         "'dir' is a non-repo directory fixture; repo-task cases accept only file fixtures besides the repo"),
        ('["repo", "rf"]', '[[fixtures]]\nid = "rf"\nkind = "repo"\npath = "verify/check.py"\n',
         "repo fixture 'rf' must be a directory"),
    ],
)
def test_it_enforces_the_repo_task_fixture_shape(tmp_path, refs, more, reason):
    assert only_problem(repo_pack(tmp_path, refs, more=more)) == f"benchpack.toml: cases[0].fixture_refs: {reason}"


def test_it_rejects_warmups_when_a_pack_has_repo_tasks(tmp_path):
    root = repo_pack(tmp_path, more="[defaults]\nwarmup = 1\n")
    assert only_problem(root) == (
        "benchpack.toml: defaults.warmup: warmups are not supported for repo-task cases (fix); set it to 0"
    )


def test_it_allows_warmups_for_chat_only_packs(tmp_path):
    root = write_pack(tmp_path / "p", PACK_HEAD + "[defaults]\nwarmup = 1\n" + CHAT_CASE)
    assert load_pack(root).defaults.warmup == 1


def test_it_rejects_harness_on_non_repo_task_cases(tmp_path):
    manifest = PACK_HEAD + CHAT_CASE + 'harness = { id = "fenced-patch" }\n'
    assert only_problem(write_pack(tmp_path / "p", manifest)) == (
        "benchpack.toml: cases[0].harness: is only allowed on repo-task cases"
    )


@pytest.mark.parametrize(
    "harness, reason",
    [
        ('"fenced-patch"', 'cases[0].harness: must be a table, e.g. { id = "fenced-patch" }'),
        ("{ timeout_s = 5 }", "cases[0].harness.id: is required"),
        ("{ id = 3 }", "cases[0].harness.id: must be a string"),
        ('{ id = "magic" }', "cases[0].harness.id: unknown harness 'magic' (expected one of fenced-patch, external-agent)"),
        ('{ id = "fenced-patch", command = "x" }', "cases[0].harness.command: unexpected key (allowed: id, timeout_s)"),
        ('{ id = "fenced-patch", timeout_s = 0 }', "cases[0].harness.timeout_s: must be a positive number of seconds, got 0"),
        ('{ id = "fenced-patch", timeout_s = -1.5 }', "cases[0].harness.timeout_s: must be a positive number of seconds, got -1.5"),
        ('{ id = "fenced-patch", timeout_s = true }', "cases[0].harness.timeout_s: must be a positive number of seconds, got True"),
        ('{ id = "fenced-patch", timeout_s = "5" }', "cases[0].harness.timeout_s: must be a positive number of seconds, got '5'"),
        ('{ id = "fenced-patch", timeout_s = [5] }', "cases[0].harness.timeout_s: must be a positive number of seconds, got [5]"),
    ],
)
def test_it_validates_the_harness_table(tmp_path, harness, reason):
    assert only_problem(repo_pack(tmp_path, extra=f"harness = {harness}")) == f"benchpack.toml: {reason}"


def test_it_accepts_float_harness_timeouts(tmp_path):
    case = load_pack(repo_pack(tmp_path, extra='harness = { id = "fenced-patch", timeout_s = 2.5 }')).cases[0]
    assert case.harness.timeout_s == 2.5


def test_it_rejects_verify_script_on_chat_cases(tmp_path):
    manifest = PACK_HEAD + CHAT_CASE + VERIFY.format(more="") + "\n"
    root = write_pack(tmp_path / "p", manifest, {"verify/check.py": ""})
    assert only_problem(root) == "benchpack.toml: cases[0].scoring.mode: verify-script scoring is only allowed on repo-task cases"


def test_it_rejects_a_pack_level_verify_script_inherited_by_chat_cases(tmp_path):
    more = CHAT_CASE + '[scoring]\nmode = "verify-script"\nscript = "verify/check.py"\n'
    assert only_problem(repo_pack(tmp_path, more=more)) == (
        "benchpack.toml: scoring.mode: verify-script scoring is only allowed on repo-task cases (inherited by c)"
    )


@pytest.mark.parametrize(
    "more, reason",
    [
        ("", None),
        (", timeout_s = 0", "scoring.timeout_s: must be a positive number of seconds, got 0"),
        (", timeout_s = -3", "scoring.timeout_s: must be a positive number of seconds, got -3"),
        (", timeout_s = true", "scoring.timeout_s: must be a positive number of seconds, got True"),
        (', timeout_s = "30"', "scoring.timeout_s: must be a positive number of seconds, got '30'"),
        (', environment = "A=b"', "scoring.environment: must be a table of string values"),
        (', environment = { "1A" = "x" }', "scoring.environment: '1A' is not a valid variable name (must match ^[A-Za-z_][A-Za-z0-9_]*$)"),
        (', environment = { "A-B" = "x" }', "scoring.environment: 'A-B' is not a valid variable name (must match ^[A-Za-z_][A-Za-z0-9_]*$)"),
        (', environment = { "A=B" = "x" }', "scoring.environment: 'A=B' is not a valid variable name (must match ^[A-Za-z_][A-Za-z0-9_]*$)"),
        (', environment = { "A B" = "x" }', "scoring.environment: 'A B' is not a valid variable name (must match ^[A-Za-z_][A-Za-z0-9_]*$)"),
        (', environment = { "" = "x" }', "scoring.environment: '' is not a valid variable name (must match ^[A-Za-z_][A-Za-z0-9_]*$)"),
        (", environment = { A = 1 }", "scoring.environment.A: must be a string, got 1"),
        (", environment = { A = true }", "scoring.environment.A: must be a string, got True"),
        (", environment = { A = [\"x\"] }", "scoring.environment.A: must be a string, got ['x']"),
        (", environment = { A = { B = \"x\" } }", "scoring.environment.A: must be a string, got {'B': 'x'}"),
        (', environment = { A = "x\\u0000y" }', "scoring.environment.A: must not contain NUL"),
    ],
)
def test_it_validates_verify_script_timeout_and_environment(tmp_path, more, reason):
    root = repo_pack(tmp_path, extra=VERIFY.format(more=more).replace("scoring =", "scoring =", 1))
    if reason is None:
        assert load_pack(root).cases[0].scoring.mode == "verify-script"
    else:
        assert only_problem(root) == f"benchpack.toml: cases[0].{reason}"


@pytest.mark.parametrize(
    "script, reason",
    [
        ('"/bin/true"', "'/bin/true' is an absolute path; use a path relative to the pack directory"),
        ('"../check.py"', "escapes the pack directory"),
        ('"verify/missing.py"', "'verify/missing.py' does not exist"),
        ('"verify"', "'verify' is not a file"),
    ],
)
def test_it_validates_verify_script_paths(tmp_path, script, reason):
    extra = f'scoring = {{ mode = "verify-script", script = {script} }}'
    assert only_problem(repo_pack(tmp_path, extra=extra)) == f"benchpack.toml: cases[0].scoring.script: {reason}"


def test_it_rejects_verify_scripts_that_escape_through_a_symlink(tmp_path):
    (tmp_path / "evil.py").write_text("")
    root = repo_pack(tmp_path, extra='scoring = { mode = "verify-script", script = "verify/link.py" }')
    os.symlink(tmp_path / "evil.py", root / "verify" / "link.py")
    assert only_problem(root) == "benchpack.toml: cases[0].scoring.script: escapes the pack directory through a symlink"


# -- locating packs -------------------------------------------------------------


def test_it_resolves_paths_first_then_bundled_ids(tmp_path):
    root = write_pack(tmp_path / "p", PACK_HEAD + CHAT_CASE)
    assert resolve_pack_path(str(root)) == root
    assert resolve_pack_path("smoke-chat") == bundled_packs_dir() / "smoke-chat"
    with pytest.raises(PackError) as info:
        resolve_pack_path("no-such-pack")
    assert info.value.lines()[0].startswith("no-such-pack: no such pack directory or bundled pack id (bundled: ")
