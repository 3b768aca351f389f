"""Pack manifest model and loader (`benchpack.toml`, see the format spec).

`load_pack` checks every rule of the format at load time and raises one
PackError listing *all* problems, so a pack author fixes a manifest in one
round instead of one error at a time. Everything a run needs (assembled
prompts, loaded JSON schemas, resolved paths) is read here, once, so the
runner never has to touch manifest text again.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import tomllib
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

from benchpack import ids
from benchpack.errors import PackError, Problem
from benchpack.packs.lane_spec import Lanes, parse_lanes
from benchpack.packs.prompt_cache import POLICIES as PROMPT_CACHE_POLICIES

MANIFEST_NAME = "benchpack.toml"
# Pack, case and fixture ids: the registry's identifier grammar (benchpack/ids.py), so a pack that loads
# has ids every registry page can route (a case id with '/' once broke every leaderboard page).
ID_RE = ids.ID_RE
ID_GRAMMAR = f"^{ids.ID_PATTERN}$"
ENV_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CASE_KINDS = ("chat", "completion", "repo-task", "replay")
SCORING_MODES = ("none", "contains", "regex", "json-schema", "equals", "verify-script", "llm-judge", "tool-call")
# A tool's name as every API accepts it (OpenAI's rule, the strictest of the three).
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TOOL_CHOICES = ("auto", "required", "none")
HARNESS_IDS = ("fenced-patch", "external-agent")
HARNESS_KEYS = ("id", "timeout_s")
REPO_FIXTURE_KIND = "repo"


class Fixture(msgspec.Struct, frozen=True):
    id: str
    kind: str
    path: str  # as declared in the manifest (POSIX, pack-relative)
    description: str
    resolved: Path
    is_dir: bool


class Harness(msgspec.Struct, frozen=True):
    id: str
    timeout_s: float | None


class Scoring(msgspec.Struct, frozen=True):
    mode: str
    expected: str | None
    pattern: str | None
    schema: dict | None
    schema_path: str | None
    script: str | None
    script_resolved: Path | None
    timeout_s: float | None
    environment: dict[str, str] | None
    raw: dict
    # mode "tool-call": the function the call must name, and the argument values it must carry
    # (`schema` is then the arguments' JSON schema).
    tool_name: str | None = None
    tool_arguments: dict | None = None


class Defaults(msgspec.Struct, frozen=True):
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = False
    warmup: int = 0
    repetitions: int = 1
    # "cold": every request gets a fresh prompt the server cannot have cached
    # (benchpack.packs.prompt_cache); "server-default": sent as written.
    prompt_cache: str = "server-default"


class Case(msgspec.Struct, frozen=True):
    id: str
    kind: str
    prompt: str
    prompt_file: str | None
    fixture_refs: tuple[str, ...]
    scoring: Scoring | None
    harness: Harness | None
    raw: dict
    # Native tools this case sends (the pack's [[tools]] it names, neutral form:
    # {"name", "description", "parameters"}), and its tool_choice ("auto" | "required" | "none" | {"name"}).
    tools: tuple[dict, ...] = ()
    tool_choice: Any = None


class Pack(msgspec.Struct, frozen=True):
    id: str
    version: str
    description: str
    defaults: Defaults
    cases: tuple[Case, ...]
    fixtures: tuple[Fixture, ...]
    scoring: Scoring | None
    root: Path
    manifest_path: Path
    # Measurement lanes ([lanes.*]: depth, concurrency, rate, slo); empty when none.
    lanes: Lanes = Lanes()
    # [[tools]]: every tool the cases may send, defined once (docs/format.md, "Tools").
    tools: tuple[dict, ...] = ()

    def fixture(self, fixture_id: str) -> Fixture:
        for fixture in self.fixtures:
            if fixture.id == fixture_id:
                return fixture
        raise KeyError(fixture_id)

    def repo_fixture(self, case: Case) -> Fixture | None:
        """The repo snapshot a repo-task case works on (None for other cases)."""
        if case.kind != "repo-task":
            return None
        for ref in case.fixture_refs:
            fixture = self.fixture(ref)
            if fixture.kind == REPO_FIXTURE_KIND and fixture.is_dir:
                return fixture
        return None


def bundled_packs_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "benchpacks"


def resolve_pack_path(name_or_path: str) -> Path:
    """A pack directory or manifest path as given, else a bundled pack: `ID` is its newest
    version, `ID@VERSION` any released one (benchpack/packs/catalogue.py)."""
    candidate = Path(name_or_path)
    if candidate.exists():
        return candidate
    from benchpack.packs import catalogue  # only for a bundled pack's id: a path needs no catalogue

    pack_id, _, version = name_or_path.partition("@")
    if ID_RE.fullmatch(pack_id):
        entry = catalogue.find(pack_id, version or None)
        if entry is not None:
            return entry.path
        known = catalogue.versions_of(pack_id)
        bundled_versions = f"bundled versions: {', '.join(known) or 'none'}; `benchpack list --all`"
        if version and (pack_id, version) in catalogue.seed_versions():
            raise PackError(Problem(name_or_path, "", f"version {version} of pack {pack_id!r} was published by the "
                                    "seed implementation of the Benchpack format; its content is not bundled "
                                    f"({bundled_versions})"))
        if version and known:
            raise PackError(Problem(name_or_path, "", f"no version {version} of bundled pack {pack_id!r} "
                                    f"({bundled_versions})"))
    bundled = sorted(v.id for v in catalogue.newest_versions())
    import difflib  # only to name the nearest id of a pack that was not found

    nearest = difflib.get_close_matches(pack_id, bundled, n=1, cutoff=0.6)
    if nearest:
        reason = f"no such pack directory or bundled pack id; did you mean {nearest[0]!r}? (`benchpack list` shows all)"
    else:
        reason = f"no such pack directory or bundled pack id (bundled: {', '.join(bundled) or 'none'})"
    raise PackError(Problem(name_or_path, "", reason))


def load_pack(path: str | Path) -> Pack:
    given = Path(path)
    if given.is_dir():
        manifest_path = given / MANIFEST_NAME
        if not manifest_path.is_file():
            raise PackError(Problem(str(given), "", f"no {MANIFEST_NAME} in this directory"))
    elif given.is_file():
        manifest_path = given
    else:
        raise PackError(Problem(str(given), "", "no such pack directory or manifest file"))
    try:
        root = manifest_path.parent.resolve(strict=True)
        data = _read_manifest(manifest_path)
        return _Loader(root, root / manifest_path.name, manifest_path.name).load(data)
    except OSError as exc:
        raise PackError(Problem(str(given), "", f"cannot be read: {exc.strerror or exc}")) from exc


def _read_manifest(manifest_path: Path) -> dict:
    label = manifest_path.name
    try:
        text = manifest_path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackError(Problem(label, "", f"is not valid UTF-8 (byte offset {exc.start})")) from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        where = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
        if where:
            reason = message[: where.start()]
            field = f"line {where.group(1)}, column {where.group(2)}"
        else:
            reason, field = message, ""
        raise PackError(Problem(label, field, f"invalid TOML: {reason}")) from exc


def _is_number(value: Any) -> bool:
    # TOML booleans are Python bools, and bool is an int subclass: exclude them.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_positive_number(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value) and value > 0


class _Loader:
    """Builds a Pack from parsed TOML while collecting every problem found."""

    def __init__(self, root: Path, manifest_path: Path, label: str):
        self.root = root
        self.manifest_path = manifest_path
        self.label = label
        self.problems: list[Problem] = []
        self.tools: dict[str, dict] = {}  # [[tools]] by name, once read
        self._fixture_texts: dict[str, str | None] = {}
        self._fixture_fields: dict[str, str] = {}  # fixture id -> "fixtures[i].path"
        self._declared_fixture_ids: set[str] = set()  # including ones whose declaration failed

    def problem(self, field: str, reason: str) -> None:
        self.problems.append(Problem(self.label, field, reason))

    # -- top level -------------------------------------------------------

    def load(self, data: dict) -> Pack:
        pack_table = self._table(data, "pack", required=True)
        pack_id = self._id(pack_table.get("id"), "pack.id")
        version = pack_table.get("version")
        if not isinstance(version, str) or not version.strip():
            self.problem("pack.version", "is required and must be a non-empty string")
        description = pack_table.get("description", "")
        if not isinstance(description, str):
            self.problem("pack.description", "must be a string")
            description = ""

        defaults = self._defaults(self._table(data, "defaults"))
        fixtures = self._fixtures(data.get("fixtures"))
        pack_scoring = self._scoring(data["scoring"], "scoring") if "scoring" in data else None
        self.tools = self._tools(data.get("tools"))
        cases = self._cases(data.get("cases"), fixtures, pack_scoring)
        self._check_inherited_verify_script(cases, pack_scoring)
        lanes = parse_lanes(data.get("lanes"), self.problem, [c.id for c in cases],
                            [c.id for c in cases if c.kind in ("chat", "completion")], streamed=defaults.stream)
        if defaults.warmup > 0:
            repo_cases = [c.id for c in cases if c.kind == "repo-task"]
            if repo_cases:
                self.problem(
                    "defaults.warmup",
                    f"warmups are not supported for repo-task cases ({', '.join(repo_cases)}); set it to 0",
                )

        if self.problems:
            raise PackError(self.problems)
        return Pack(
            id=pack_id,
            version=version,
            description=description,
            defaults=defaults,
            cases=tuple(cases),
            fixtures=tuple(fixtures.values()),
            scoring=pack_scoring,
            root=self.root,
            manifest_path=self.manifest_path,
            lanes=lanes,
            tools=tuple(self.tools.values()),
        )

    def _tools(self, entries: Any) -> dict[str, dict]:
        """[[tools]]: name -> the neutral definition {"name", "description"?, "parameters"}."""
        tools: dict[str, dict] = {}
        if entries is None:
            return tools
        if not isinstance(entries, list):
            self.problem("tools", "must be an array of tables ([[tools]])")
            return tools
        for index, entry in enumerate(entries):
            where = f"tools[{index}]"
            if not isinstance(entry, dict):
                self.problem(where, "must be a table")
                continue
            unknown = set(entry) - {"name", "description", "parameters"}
            if unknown:
                self.problem(where, f"unknown key(s) {', '.join(sorted(unknown))} (expected name, description, parameters)")
            name = entry.get("name")
            if not isinstance(name, str) or not TOOL_NAME.match(name):
                self.problem(f"{where}.name", f"must be 1-64 letters, digits, '_' or '-', got {name!r}")
                continue
            if name in tools:
                self.problem(f"{where}.name", f"duplicate tool name {name!r}")
            description = entry.get("description")
            if description is not None and not isinstance(description, str):
                self.problem(f"{where}.description", "must be a string")
            parameters = entry.get("parameters", {"type": "object", "properties": {}})
            if not isinstance(parameters, dict) or parameters.get("type") != "object":
                self.problem(f"{where}.parameters", "must be a JSON schema table with type = \"object\"")
                continue
            if not self._valid_schema(parameters, f"{where}.parameters", "the parameters"):
                continue
            tools[name] = {"name": name, **({"description": description} if description else {}),
                           "parameters": copy.deepcopy(parameters)}
        return tools

    def _valid_schema(self, schema: dict, field: str, label: str) -> bool:
        import jsonschema  # here, not at the top: most packs have no schema and `list` must stay fast

        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            self.problem(field, f"{label} is not a valid JSON schema: {exc.message}")
            return False
        return True

    def _case_tools(self, entry: dict, where: str, kind: str) -> tuple[tuple[dict, ...], Any]:
        names, choice = entry.get("tools"), entry.get("tool_choice")
        if names is None:
            if choice is not None:
                self.problem(f"{where}.tool_choice", "needs tools (the case sends none)")
            return (), None
        if kind not in ("chat", "completion"):
            self.problem(f"{where}.tools", f"is only allowed on chat and completion cases, not {kind!r}")
            return (), None
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            self.problem(f"{where}.tools", "must be a non-empty array of tool names from [[tools]]")
            return (), None
        missing = [n for n in names if n not in self.tools]
        if missing:
            self.problem(f"{where}.tools", f"names no [[tools]] entry: {', '.join(missing)}")
            return (), None
        if choice is not None:
            if isinstance(choice, dict):
                if set(choice) != {"name"} or choice.get("name") not in names:
                    self.problem(f"{where}.tool_choice", "a table must be {name = \"<one of the case's tools>\"}")
            elif choice not in TOOL_CHOICES:
                self.problem(f"{where}.tool_choice", f"must be one of {', '.join(TOOL_CHOICES)} or {{name = \"…\"}}, "
                             f"got {choice!r}")
        return tuple(self.tools[n] for n in names), copy.deepcopy(choice)

    def _table(self, data: dict, key: str, required: bool = False) -> dict:
        if key not in data:
            if required:
                self.problem(key, f"missing [{key}] table")
            return {}
        value = data[key]
        if not isinstance(value, dict):
            self.problem(key, "must be a table")
            return {}
        return value

    def _id(self, value: Any, field: str) -> str:
        if value is None:
            self.problem(field, "is required")
            return ""
        if not isinstance(value, str) or not ID_RE.fullmatch(value):
            self.problem(field, f"{value!r} is not a valid id (must match {ID_GRAMMAR})")
            return ""
        return value

    # -- defaults ----------------------------------------------------------

    def _defaults(self, table: dict) -> Defaults:
        values: dict[str, Any] = {}
        if "temperature" in table:
            value = table["temperature"]
            if not _is_number(value) or not math.isfinite(value) or value < 0:
                self.problem("defaults.temperature", f"must be a number >= 0, got {value!r}")
            else:
                values["temperature"] = float(value)
        if "max_tokens" in table:
            value = table["max_tokens"]
            if not _is_int(value) or value < 1:
                self.problem("defaults.max_tokens", f"must be a positive integer, got {value!r}")
            else:
                values["max_tokens"] = value
        if "stream" in table:
            value = table["stream"]
            if not isinstance(value, bool):
                self.problem("defaults.stream", f"must be true or false, got {value!r}")
            else:
                values["stream"] = value
        for key, minimum in (("warmup", 0), ("repetitions", 1)):
            if key in table:
                value = table[key]
                if not _is_int(value) or value < minimum:
                    self.problem(f"defaults.{key}", f"must be an integer >= {minimum}, got {value!r}")
                else:
                    values[key] = value
        if "prompt_cache" in table:
            value = table["prompt_cache"]
            if value not in PROMPT_CACHE_POLICIES:
                self.problem("defaults.prompt_cache",
                             f"must be one of {', '.join(map(repr, PROMPT_CACHE_POLICIES))}, got {value!r}")
            else:
                values["prompt_cache"] = value
        return Defaults(**values)

    # -- pack-relative paths -----------------------------------------------

    def _pack_path(self, value: Any, field: str, want: str) -> Path | None:
        """Resolve a manifest path inside the pack; `want` is "file" or "file-or-dir"."""
        if not isinstance(value, str) or not value:
            self.problem(field, "must be a non-empty string path relative to the pack directory")
            return None
        if "\x00" in value:
            self.problem(field, "must not contain NUL")
            return None
        if PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute() or PureWindowsPath(value).drive:
            self.problem(field, f"{value!r} is an absolute path; use a path relative to the pack directory")
            return None
        normalized = os.path.normpath(value)
        if normalized == ".." or normalized.startswith("../"):
            self.problem(field, "escapes the pack directory")
            return None
        try:
            resolved = (self.root / value).resolve()
        except (OSError, RuntimeError) as exc:  # symlink loops
            self.problem(field, f"{value!r} cannot be resolved: {exc}")
            return None
        if not resolved.is_relative_to(self.root):
            self.problem(field, "escapes the pack directory through a symlink")
            return None
        if not resolved.exists():
            self.problem(field, f"{value!r} does not exist")
            return None
        if want == "file-or-dir":
            if resolved == self.root:
                self.problem(field, "must not be the pack directory itself")
                return None
            if not (resolved.is_file() or resolved.is_dir()):
                self.problem(field, f"{value!r} is neither a file nor a directory")
                return None
        elif not resolved.is_file():
            self.problem(field, f"{value!r} is not a file")
            return None
        return resolved

    def _read_text(self, path: Path, field: str) -> str | None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.problem(field, f"cannot be read: {exc.strerror or exc}")
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problem(field, f"is not valid UTF-8 text (byte offset {exc.start})")
            return None
        # Same prompt bytes on every host, whatever git did to line endings.
        return text.replace("\r\n", "\n")

    # -- fixtures --------------------------------------------------------

    def _fixtures(self, entries: Any) -> dict[str, Fixture]:
        fixtures: dict[str, Fixture] = {}
        if entries is None:
            return fixtures
        if not isinstance(entries, list):
            self.problem("fixtures", "must be an array of tables ([[fixtures]])")
            return fixtures
        seen: dict[str, int] = {}
        for index, entry in enumerate(entries):
            where = f"fixtures[{index}]"
            if not isinstance(entry, dict):
                self.problem(where, "must be a table")
                continue
            fixture_id = self._id(entry.get("id"), f"{where}.id")
            self._declared_fixture_ids.add(fixture_id)
            if fixture_id in seen:
                self.problem(f"{where}.id", f"duplicate fixture id {fixture_id!r} (also fixtures[{seen[fixture_id]}])")
                fixture_id = ""
            elif fixture_id:
                seen[fixture_id] = index
            kind = entry.get("kind")
            if not isinstance(kind, str) or not kind.strip():
                self.problem(f"{where}.kind", "is required and must be a non-empty string")
                kind = None
            description = entry.get("description", "")
            if not isinstance(description, str):
                self.problem(f"{where}.description", "must be a string")
            resolved = self._pack_path(entry.get("path"), f"{where}.path", "file-or-dir")
            if fixture_id and kind and resolved and isinstance(description, str):
                fixtures[fixture_id] = Fixture(
                    id=fixture_id,
                    kind=kind,
                    path=entry["path"],
                    description=description,
                    resolved=resolved,
                    is_dir=resolved.is_dir(),
                )
                self._fixture_fields[fixture_id] = f"{where}.path"
        return fixtures

    def _fixture_text(self, fixture: Fixture) -> str | None:
        # Read once and report once, however many cases reference the file.
        if fixture.id not in self._fixture_texts:
            self._fixture_texts[fixture.id] = self._read_text(fixture.resolved, self._fixture_fields[fixture.id])
        return self._fixture_texts[fixture.id]

    # -- cases -----------------------------------------------------------

    def _cases(self, entries: Any, fixtures: dict[str, Fixture], pack_scoring: Scoring | None) -> list[Case]:
        if entries is None or entries == []:
            self.problem("cases", "at least one [[cases]] entry is required")
            return []
        if not isinstance(entries, list):
            self.problem("cases", "must be an array of tables ([[cases]])")
            return []
        cases: list[Case] = []
        seen: dict[str, int] = {}
        for index, entry in enumerate(entries):
            where = f"cases[{index}]"
            if not isinstance(entry, dict):
                self.problem(where, "must be a table")
                continue
            case_id = self._id(entry.get("id"), f"{where}.id")
            if len(case_id) > ids.MAX_CASE_ID_CHARS:  # its board key (with a lane level) must fit the registry
                self.problem(f"{where}.id", f"a case id has at most {ids.MAX_CASE_ID_CHARS} characters, not {len(case_id)}")
            if case_id in seen:
                self.problem(f"{where}.id", f"duplicate case id {case_id!r} (also cases[{seen[case_id]}])")
            elif case_id:
                seen[case_id] = index
            cases.append(self._case(entry, where, case_id, fixtures, pack_scoring))
        return cases

    def _case(
        self, entry: dict, where: str, case_id: str, fixtures: dict[str, Fixture], pack_scoring: Scoring | None
    ) -> Case:
        kind = entry.get("kind", "chat")
        if kind not in CASE_KINDS:
            self.problem(f"{where}.kind", f"unknown case kind {kind!r} (expected one of {', '.join(CASE_KINDS)})")
        base_prompt = self._base_prompt(entry, where)
        refs = self._fixture_refs(entry, where, fixtures)
        prompt = base_prompt
        for ref in refs:
            fixture = fixtures.get(ref)
            if fixture is None or fixture.is_dir:
                continue  # directory fixtures stay metadata-only
            text = self._fixture_text(fixture)
            if text is not None and prompt is not None:
                prompt = _append_fixture(prompt, fixture, text)

        harness = None
        if "harness" in entry:
            if kind != "repo-task":
                self.problem(f"{where}.harness", "is only allowed on repo-task cases")
            else:
                harness = self._harness(entry["harness"], f"{where}.harness")
        if kind == "repo-task":
            self._check_repo_task_refs(refs, fixtures, where)

        case_scoring = self._scoring(entry["scoring"], f"{where}.scoring") if "scoring" in entry else None
        if case_scoring is not None and case_scoring.mode == "verify-script" and kind != "repo-task":
            self.problem(f"{where}.scoring.mode", "verify-script scoring is only allowed on repo-task cases")
        tools, tool_choice = self._case_tools(entry, where, kind)
        effective = case_scoring if "scoring" in entry else pack_scoring
        if effective is not None and effective.mode == "tool-call":
            field = f"{where}.scoring" if "scoring" in entry else "scoring"
            if not tools:
                self.problem(f"{field}.mode", f"tool-call scoring needs tools on the case (case {case_id} sends none)")
            elif effective.tool_name not in {t["name"] for t in tools}:
                self.problem(f"{field}.name", f"{effective.tool_name!r} is not one of case {case_id}'s tools")

        return Case(
            id=case_id,
            kind=kind,
            prompt=prompt if prompt is not None else "",  # None means a problem was recorded

            prompt_file=entry.get("prompt_file"),
            fixture_refs=tuple(refs),
            scoring=case_scoring if "scoring" in entry else pack_scoring,
            harness=harness,
            raw=copy.deepcopy(entry),
            tools=tools,
            tool_choice=tool_choice,
        )

    def _base_prompt(self, entry: dict, where: str) -> str | None:
        has_inline, has_file = "prompt" in entry, "prompt_file" in entry
        if has_inline == has_file:
            which = "both" if has_inline else "neither"
            self.problem(where, f"needs exactly one of prompt or prompt_file (has {which})")
            return None
        if has_inline:
            if not isinstance(entry["prompt"], str):
                self.problem(f"{where}.prompt", "must be a string")
                return None
            return entry["prompt"]
        field = f"{where}.prompt_file"
        resolved = self._pack_path(entry["prompt_file"], field, "file")
        return self._read_text(resolved, field) if resolved else None

    def _fixture_refs(self, entry: dict, where: str, fixtures: dict[str, Fixture]) -> list[str]:
        refs = entry.get("fixture_refs", [])
        if not isinstance(refs, list):
            self.problem(f"{where}.fixture_refs", "must be an array of fixture ids")
            return []
        valid: list[str] = []
        seen: set[str] = set()
        for position, ref in enumerate(refs):
            field = f"{where}.fixture_refs[{position}]"
            if not isinstance(ref, str):
                self.problem(field, f"must be a string fixture id, got {ref!r}")
                continue
            duplicate, seen = ref in seen, seen | {ref}
            if not ID_RE.fullmatch(ref):
                self.problem(field, f"{ref!r} is not a valid id (must match {ID_GRAMMAR})")
            elif duplicate:
                self.problem(field, f"duplicate fixture ref {ref!r}")
            elif ref not in self._declared_fixture_ids:
                self.problem(field, f"unknown fixture {ref!r} (not declared in [[fixtures]])")
            else:
                # A ref to a fixture whose declaration failed is kept; that
                # failure is already reported under fixtures[i].
                valid.append(ref)
        return valid

    def _check_repo_task_refs(self, refs: list[str], fixtures: dict[str, Fixture], where: str) -> None:
        field = f"{where}.fixture_refs"
        repo_dirs = []
        for ref in refs:
            fixture = fixtures.get(ref)
            if fixture is None:
                continue
            if fixture.kind == REPO_FIXTURE_KIND and fixture.is_dir:
                repo_dirs.append(ref)
            elif fixture.kind == REPO_FIXTURE_KIND:
                self.problem(field, f"repo fixture {ref!r} must be a directory")
            elif fixture.is_dir:
                self.problem(field, f"{ref!r} is a non-repo directory fixture; repo-task cases accept only file fixtures besides the repo")
        if len(repo_dirs) != 1 and all(ref in fixtures for ref in refs):
            found = ", ".join(repo_dirs) if repo_dirs else "none"
            self.problem(field, f'repo-task cases need exactly one kind = "repo" directory fixture (found: {found})')

    def _harness(self, value: Any, where: str) -> Harness | None:
        if not isinstance(value, dict):
            self.problem(where, "must be a table, e.g. { id = \"fenced-patch\" }")
            return None
        ok = True
        for key in value:
            if key not in HARNESS_KEYS:
                self.problem(f"{where}.{key}", "unexpected key (allowed: id, timeout_s)")
                ok = False
        harness_id = value.get("id")
        if harness_id is None:
            self.problem(f"{where}.id", "is required")
            ok = False
        elif not isinstance(harness_id, str):
            self.problem(f"{where}.id", "must be a string")
            ok = False
        elif harness_id not in HARNESS_IDS:
            self.problem(f"{where}.id", f"unknown harness {harness_id!r} (expected one of {', '.join(HARNESS_IDS)})")
            ok = False
        timeout = value.get("timeout_s")
        if "timeout_s" in value and not _is_positive_number(timeout):
            self.problem(f"{where}.timeout_s", f"must be a positive number of seconds, got {timeout!r}")
            ok = False
        if not ok:
            return None
        return Harness(id=harness_id, timeout_s=float(timeout) if timeout is not None else None)

    # -- scoring -----------------------------------------------------------

    def _scoring(self, value: Any, where: str) -> Scoring | None:
        if not isinstance(value, dict):
            self.problem(where, "must be a table")
            return None
        mode = value.get("mode")
        if mode is None:
            self.problem(f"{where}.mode", "is required")
            return None
        if mode not in SCORING_MODES:
            self.problem(f"{where}.mode", f"unknown scoring mode {mode!r} (expected one of {', '.join(SCORING_MODES)})")
            return None
        count = len(self.problems)
        fields: dict[str, Any] = {
            "expected": None, "pattern": None, "schema": None, "schema_path": None, "script": None,
            "script_resolved": None, "timeout_s": None, "environment": None,
        }
        if mode in ("contains", "equals"):
            if not isinstance(value.get("expected"), str):
                self.problem(f"{where}.expected", f"is required for mode {mode!r} and must be a string")
            fields["expected"] = value.get("expected")
        elif mode == "regex":
            fields["pattern"] = self._pattern(value.get("pattern"), f"{where}.pattern")
        elif mode == "json-schema":
            fields["schema_path"] = value.get("schema")
            fields["schema"] = self._json_schema(value.get("schema"), f"{where}.schema")
        elif mode == "tool-call":
            fields["tool_name"] = value.get("name")
            if not isinstance(fields["tool_name"], str) or not TOOL_NAME.match(fields["tool_name"]):
                self.problem(f"{where}.name", "is required for mode 'tool-call': the function name the call must use")
            if "schema" in value:
                fields["schema_path"] = value.get("schema")
                fields["schema"] = self._json_schema(value.get("schema"), f"{where}.schema")
            if "arguments" in value:
                if isinstance(value["arguments"], dict):
                    fields["tool_arguments"] = copy.deepcopy(value["arguments"])
                else:
                    self.problem(f"{where}.arguments", "must be a table of the argument values the call must carry")
        elif mode == "verify-script":
            fields["script"] = value.get("script")
            fields["script_resolved"] = self._pack_path(value.get("script"), f"{where}.script", "file")
            if "timeout_s" in value:
                if _is_positive_number(value["timeout_s"]):
                    fields["timeout_s"] = float(value["timeout_s"])
                else:
                    self.problem(f"{where}.timeout_s", f"must be a positive number of seconds, got {value['timeout_s']!r}")
            if "environment" in value:
                fields["environment"] = self._environment(value["environment"], f"{where}.environment")
        if mode != "verify-script":
            for key in ("timeout_s", "environment", "script"):
                if key in value:
                    self.problem(f"{where}.{key}", "is only allowed with mode = \"verify-script\"")
        if mode != "tool-call":
            for key in ("name", "arguments"):
                if key in value:
                    self.problem(f"{where}.{key}", "is only allowed with mode = \"tool-call\"")
        if len(self.problems) > count:
            return None
        return Scoring(mode=mode, raw=copy.deepcopy(value), **fields)

    def _pattern(self, pattern: Any, field: str) -> str | None:
        if not isinstance(pattern, str):
            self.problem(field, "is required for mode 'regex' and must be a string")
            return None
        try:
            re.compile(pattern)
        except re.error as exc:
            self.problem(field, f"is not a valid regular expression: {exc}")
            return None
        return pattern

    def _json_schema(self, path_value: Any, field: str) -> dict | None:
        resolved = self._pack_path(path_value, field, "file")
        if resolved is None:
            return None
        text = self._read_text(resolved, field)
        if text is None:
            return None
        try:
            schema = json.loads(text)
        except json.JSONDecodeError as exc:
            self.problem(field, f"{path_value!r} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
            return None
        if not isinstance(schema, dict):
            self.problem(field, f"{path_value!r} must contain a JSON object")
            return None
        import jsonschema  # here, not at the top: most packs have no schema and `list` must stay fast

        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            self.problem(field, f"{path_value!r} is not a valid JSON schema: {exc.message}")
            return None
        return schema

    def _environment(self, value: Any, field: str) -> dict[str, str] | None:
        if not isinstance(value, dict):
            self.problem(field, "must be a table of string values")
            return None
        environment: dict[str, str] = {}
        for key, item in value.items():
            if not ENV_KEY_RE.fullmatch(key):
                self.problem(field, f"{key!r} is not a valid variable name (must match ^[A-Za-z_][A-Za-z0-9_]*$)")
            elif not isinstance(item, str):
                self.problem(f"{field}.{key}", f"must be a string, got {item!r}")
            elif "\x00" in item:
                self.problem(f"{field}.{key}", "must not contain NUL")
            else:
                environment[key] = item
        return environment

    def _check_inherited_verify_script(self, cases: list[Case], pack_scoring: Scoring | None) -> None:
        if pack_scoring is None or pack_scoring.mode != "verify-script":
            return
        inheriting = [c.id for c in cases if c.scoring is pack_scoring and c.kind != "repo-task"]
        if inheriting:
            self.problem(
                "scoring.mode",
                f"verify-script scoring is only allowed on repo-task cases (inherited by {', '.join(inheriting)})",
            )


def _append_fixture(prompt: str, fixture: Fixture, text: str) -> str:
    # The spec's delimiter shape: exactly one blank line between the prompt
    # and the BEGIN line, so a prompt file that ends in a newline (as most
    # files do) gets one more newline, not two. A fixture that ends without a
    # newline gets one so the END line always starts on its own line.
    separator = "\n" if prompt.endswith("\n") else "\n\n"
    body = text if text.endswith("\n") else text + "\n"
    return (
        f"{prompt}{separator}--- BEGIN FIXTURE {fixture.id} ({fixture.kind}, {fixture.path}) ---\n"
        f"{body}--- END FIXTURE {fixture.id} ---"
    )
