"""`registry import`: index result directories into the SQLite registry.

Reads only `run.jsonl`, `hardware.json` and `run-metadata.json` — never
`raw/`, workspaces or task artifacts — and writes only the database. Rows
stream through validation into `executemany`, a chunk at a time, inside one
transaction for all given directories; any invalid input rolls the whole import back and
is reported with every problem found.

A run's identity is its canonical (resolved) directory path: re-importing
updates the run row in place (keeping its id) and replaces its child rows.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3

import msgspec
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import islice, repeat
from operator import add, itemgetter
from pathlib import Path

from benchpack.errors import BenchpackError, Problem
from benchpack.measurement.gcpause import gc_paused
from benchpack.run.metadata import validate_run_metadata
from benchpack.registry import fingerprint as fp
from benchpack.packs.case_content import case_spec
from benchpack.registry.casebatch import CaseBatch
from benchpack.registry.casestats import FIGURES
from benchpack.registry.casestate import state_of_counts
from benchpack.registry.rows import COLUMNS, BadRow, FastPathMiss, decode_sql_row, normalize_row
from benchpack.registry.schema import (drop_row_indexes_if_empty, drop_unused_key_json, metadata_anchors,
                                      open_for_write, transaction)

RUN_FILE = "run.jsonl"
HARDWARE_FILE = "hardware.json"
RUN_METADATA_FILE = "run-metadata.json"
MAX_REPORTED_PROBLEMS = 50
CHUNK_ROWS = 10_000
# Case stats are taken for many runs at once (casebatch.py), after a run once this many rows are waiting.
STATS_BATCH_ROWS = 200_000

# The decoded columns first and the per-row extras last: a row's parameters are then its decoded tuple plus
# (raw_json, fingerprint, run_id, line), joined in C (`map(operator.add, ...)`), not rebuilt in Python.
ROW_INSERT = (
    f"INSERT INTO result_rows ({', '.join(COLUMNS)}, raw_json, fingerprint, run_id, line) "
    f"VALUES ({', '.join('?' * (len(COLUMNS) + 4))})"
)
_STATS_COLUMNS = (
    "run_id, pack_id, pack_version, case_id, adapter, model, row_count, ok_count, scored_count,"
    " passed_count, median_wall_s, median_ttft_s, median_prefill_tps, median_decode_tps,"
    " median_total_tps, median_output_tokens, median_prompt_tokens, median_cached_prompt_tokens,"
    " prompt_token_rows, cached_prompt_rows, fingerprint, fingerprint_complete, fingerprint_json_id,"
    " workload_key, workload_complete, workload_json_id, system_key, cache_state, median_decode_rate"
)
STATS_INSERT = f"INSERT INTO result_case_stats ({_STATS_COLUMNS}) VALUES ({', '.join('?' * 29)})"
_ANCHORS = tuple(metadata_anchors(None))
_RUN_COLUMNS = (
    "result_dir", "label", "source", "imported_at", "row_count", "ok_count", "packs",
    "hostname", "platform", "cpu_model", "gpu_models", "ram_mb", "hardware_json", "run_metadata_json",
    *_ANCHORS, "hardware_class",
)
RUN_UPSERT = (
    f"INSERT INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' * len(_RUN_COLUMNS))}) "
    f"ON CONFLICT(result_dir) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _RUN_COLUMNS[1:])
    + " RETURNING id"
)
# A new run's row into a runs table that was empty when the import began, with its id (the one SQLite would
# give it: ids from 1, in insertion order) and, when its rows have all been read before it is written, its
# counts and system key (`_PendingRows.runs`).
_NEW_RUN_COLUMNS = ("id", *_RUN_COLUMNS, "system_key", "system_json")
RUN_INSERT = f"INSERT INTO runs ({', '.join(_NEW_RUN_COLUMNS)}) VALUES ({', '.join('?' * len(_NEW_RUN_COLUMNS))})"
RUN_UPDATE = "UPDATE runs SET row_count = ?, ok_count = ?, packs = ?, system_key = ?, system_json = ? WHERE id = ?"
_KEY_OF = itemgetter(0, 1, 2, 3, 4)  # pack_id, pack_version, case_id, adapter, model
_OK_OF = itemgetter(COLUMNS.index("ok"))
_CASE_OF = itemgetter(2)
_SETUP_OF = tuple(map(itemgetter, (0, 1, 3, 4)))  # the key's columns but the case id


def _one_setup(values: list[tuple]) -> bool:
    """Whether every row of `values` (not empty) has the first row's pack, version, adapter and model."""
    for get in _SETUP_OF:
        column = list(map(get, values))
        if column.count(column[0]) != len(column):
            return False
    return True


@dataclass(frozen=True)
class RunSource:
    """One result directory to import, with the label it is known by."""

    path: Path
    label: str | None = None
    source: str = "result-dir"


@dataclass(frozen=True)
class ImportSummary:
    run_id: int
    result_dir: str
    label: str
    rows: int
    ok_rows: int
    cases: int
    replaced: bool

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _read_text(path: Path, problems: list[Problem]) -> str | None:
    """The file's text; None when it does not exist, or cannot be read (then with a problem recorded)."""
    try:  # no exists() first: one system call less per file, two per directory
        with open(path, "rb", buffering=0) as handle:  # no text wrapper for a small file: ~1/4 less per file
            return handle.read().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(str(path), "", f"not valid JSON ({exc})"))
        return None


def _parse_object(text: str | None, path: Path, problems: list[Problem]) -> dict | None:
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(Problem(str(path), "", f"not valid JSON ({exc})"))
        return None
    if not isinstance(data, dict):
        problems.append(Problem(str(path), "", "must be a JSON object"))
        return None
    return data


def canonical_path(path: Path, parents: dict[Path, Path]) -> Path:
    """`path.resolve()`, its parent directory resolved once per import (`parents`): the result
    directories of one import mostly share a parent, and a full resolve lstat's every component (~1/5 of
    a 500-row directory's bare insert cost). Only a last component that is itself a symlink (or `.`/`..`)
    takes the full resolve."""
    name = path.name
    if name in ("", ".", "..") or path.is_symlink():
        return path.resolve()
    parent = path.parent
    resolved = parents.get(parent)
    if resolved is None:
        resolved = parents[parent] = parent.resolve()
    return resolved / name


def check_hardware(hardware: dict, path: Path) -> list[Problem]:
    problems = []
    for key in ("hostname", "platform", "os", "cpu_model", "chip"):
        if hardware.get(key) is not None and not isinstance(hardware[key], str):
            problems.append(Problem(str(path), key, "must be a string or null"))
    for key in ("ram_mb", "cpu_count"):
        value = hardware.get(key)
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            problems.append(Problem(str(path), key, "must be a number or null"))
    gpus = hardware.get("gpus")
    if gpus is not None and not (isinstance(gpus, list) and all(isinstance(g, dict) for g in gpus)):
        problems.append(Problem(str(path), "gpus", "must be a list of objects"))
    return problems


def check_run_metadata(metadata: dict, path: Path) -> list[Problem]:
    """D-025 shape, checked by the same code `benchpack run` uses."""
    try:
        validate_run_metadata(metadata, str(path))
    except BenchpackError as exc:
        return exc.problems
    return []


def _gpu_models(hardware: dict | None) -> str | None:
    gpus = (hardware or {}).get("gpus")
    if not isinstance(gpus, list):
        return None
    return ", ".join(str(g.get("model")) for g in gpus if isinstance(g, dict) and g.get("model")) or None


class _PendingRows:
    """Decoded rows not yet written, gathered across runs until there are CHUNK_ROWS of them: then their
    case-stats columns go into the batch and the rows into one `executemany`. A 500-row directory paid a
    dozen numpy calls and an `executemany` of its own (~1/20 of its bare insert cost); a run of one big
    file writes each chunk as it comes, as before."""

    def __init__(self, conn: sqlite3.Connection, batch: CaseBatch):
        self.conn, self.batch = conn, batch
        # New runs' rows (RUN_INSERT) not yet written: written in one `executemany` before the first rows
        # or stats that reference them, usually with their final counts, so a 500-row directory pays
        # neither an INSERT of its own nor the UPDATE of its counts (two statements, ~1/50 of its import).
        self.runs: list[tuple] = []
        self.next_run_id = 1  # the id of the next new run, when the runs table was empty at the start
        self._clear()

    def _clear(self) -> None:
        self.owners: list[int] = []
        self.texts: list[str] = []
        self.params: list[tuple] = []

    def add(self, owners: list[int], texts: list[str], params: list[tuple]) -> None:
        if self.params:
            self.owners += owners
            self.texts += texts
            self.params += params
        else:
            self.owners, self.texts, self.params = owners, texts, params
        if len(self.params) >= CHUNK_ROWS:
            self.write()

    def __len__(self) -> int:
        return len(self.params)

    def write(self) -> None:
        """The waiting runs' rows, then the waiting result rows (their stats columns into the batch)."""
        if self.runs:
            self.conn.executemany(RUN_INSERT, self.runs)
            self.runs = []
        if not self.params:
            return
        batch, owners, texts = self.batch, self.owners, self.texts
        # the stats read the decoded columns that lead each parameter tuple; back: the ok rows without
        # server token counts
        for index in batch.add_chunk(owners, self.params).tolist():
            batch.add_state(owners[index], state_of_counts(None, None, json.loads(texts[index]).get("prompt_cache")))
        self.conn.executemany(ROW_INSERT, self.params)
        self._clear()


class _RunImporter:
    """Streams one result directory's rows into the open transaction."""

    def __init__(self, conn: sqlite3.Connection, source: RunSource, problems: list[Problem],
                 fingerprints: dict, pending: "_PendingRows", canonical: Path, may_exist: bool = True):
        self.conn = conn
        self.may_exist = may_exist  # False: the runs table was empty when the import began
        self.source = source
        self.problems = problems
        self.canonical = canonical  # source.path resolved
        self.run_file = self.canonical / RUN_FILE
        # Its rows wait in the import's pending rows; its case stats go into the import's batch, one group
        # per case (`_open_groups`).
        self.pending = pending
        self.batch = pending.batch
        self.groups: dict[tuple, int] = {}
        # Shared by every run of one import: runs from one machine, model and
        # runtime have the same fingerprint inputs, and a canonical JSON dump
        # plus sha256 per case was a large part of a small run's import.
        self.fingerprints = fingerprints
        self.digests: dict[int, str] = {}  # the hot loop's: each group's fingerprint digest, by group number
        self.run_id = 0
        self.system: tuple[fp.Key, str] | None = None
        self.packs: dict[str, None] = {}
        self.rows = 0
        self.ok_rows = 0

    def _fingerprint(self, pack_id, pack_version, case_id, model) -> tuple[fp.Fingerprint, int, int]:
        """The case's fingerprint, its JSON's key_json id and completeness, computed once per import for
        equal inputs."""
        key = (self.run_key, pack_id, pack_version, case_id, model)
        found = self.fingerprints.get(key)
        if found is None:
            print_ = fp.compute(fp.case_inputs(self.run_fp_inputs, pack_id, pack_version, case_id, model))
            found = self.fingerprints[key] = (print_, key_json_id(self.conn, self.fingerprints, print_.to_json()),
                                              int(print_.complete))
        return found

    def _read_rows(self, run_id: int, handle) -> None:
        """`handle`'s rows into the import's pending rows (`_PendingRows`), a chunk of CHUNK_ROWS lines at a
        time, with their insert parameters.

        Per row, Python does only what cannot be done in C: the decode (one msgspec call and the column
        tuple, as a bare parse would). Everything else runs over the chunk in C calls — keys, each row's
        case (group), digests, the stats' metric columns (`CaseBatch.add_chunk`), and the parameter tuples
        (decoded columns + extras, `operator.add`) — so the import stays near a bare parse + executemany
        (bench/registry_import.py) rather than paying a dozen Python statements per row."""
        problems = self.problems
        number = 0
        groups = self.groups
        while lines := list(islice(handle, CHUNK_ROWS)):
            first, number = number + 1, number + len(lines)
            texts = [line.rstrip("\r\n") for line in lines]
            try:
                values = list(map(decode_sql_row, texts))
                numbers: range | list = range(first, number + 1)
            except FastPathMiss:  # a blank line, or a row only the exact checks can judge: row by row
                values, numbers, texts = self._checked(first, texts)
            if problems or not values:
                continue  # keep checking, stop writing: the transaction will roll back
            # Each row's group: one hash of its 5-tuple key per row where that can be (each one costs about
            # a tenth of the row's decode). A run's first chunk has only new cases, so it skips the lookup.
            if not groups:
                # A run's first chunk: every case is new. One pass (setdefault, in C) gives each row the
                # index of its case's first row and the cases in first-seen order with that index; the
                # group numbers then come by list index, not a second hash per row. When the chunk has one
                # pack, version, adapter and model (a run of one model: four equality scans, in C), the
                # case id alone tells the cases apart: no 5-tuple built and hashed per row, one hash of a
                # string instead (decoded strings are new objects, each hashed once).
                if _one_setup(values):
                    first_row: dict = {}
                    firsts = list(map(first_row.setdefault, map(_CASE_OF, values), range(len(values))))
                    pack_id, pack_version, _, adapter, model = values[0][:5]
                    new = [(i, (pack_id, pack_version, case_id, adapter, model)) for case_id, i in first_row.items()]
                else:
                    first_row = {}
                    firsts = list(map(first_row.setdefault, map(_KEY_OF, values), range(len(values))))
                    new = [(i, k) for k, i in first_row.items()]
                base = len(self.batch.infos)  # _open_groups numbers them from here, in this order
                self._open_groups(new, texts)
                group_at = dict(zip(first_row.values(), range(base, base + len(first_row))))
                owners = list(map(group_at.__getitem__, firsts))
            elif None in (owners := list(map(groups.get, keys := list(map(_KEY_OF, values))))):
                # each key's first row: walking backwards, the last index written wins (in C); the new cases
                # are opened in first-appearance order, the order their stats rows are written. (A
                # `keys.index` per new case scanned ~250 tuples each in a 500-row, 50-case run.)
                first_row = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))
                self._open_groups(sorted((i, k) for k, i in first_row.items() if k not in groups), texts)
                owners = list(map(groups.__getitem__, keys))
            self.rows += len(values)
            self.ok_rows += sum(map(_OK_OF, values))
            extras = zip(texts, map(self.digests.__getitem__, owners), repeat(run_id), numbers)
            # The parameter tuples start with the decoded columns, at the same indexes: the stats read
            # them there, and the decoded tuples are freed here, while hot, not held until the write.
            self.pending.add(owners, texts, list(map(add, values, extras)))

    def _checked(self, first: int, texts: list[str]) -> tuple[list, list, list]:
        values, numbers, kept = [], [], []
        for number, text in enumerate(texts, start=first):
            if not text or text.isspace():
                continue
            try:
                row = decode_sql_row(text)
            except FastPathMiss:
                row = self._slow_row(number, text)
                if row is None:
                    continue
            values.append(row)
            numbers.append(number)
            kept.append(text)
        return values, numbers, kept

    def _open_groups(self, new: list[tuple[int, tuple]], texts: list[str]) -> None:
        """The cases first seen in a chunk ((index of its first row, key), in row order): each case's
        digest, its group in the batch, and what its stats row needs at flush: fingerprint, and the
        workload key's inputs from the case's first row (request settings, lane fields) read as raw JSON
        (`workload_bits`). One loop for the chunk, the per-case constants (fingerprint, its JSON id, the
        packs entry) looked up once per import and run context: a registry of many 500-row, 50-case
        directories opens a case every 10 rows, and a method call plus a dozen lookups per case was
        ~1/25 of the import."""
        if self.system is None:  # the run's system key names the model of its first case
            self.system = self._system(new[0][1][4])
        cases, infos, first_rows = self.cases, self.infos, self.first_rows
        groups, digests, packs, open_group = self.groups, self.digests, self.packs, self.batch.open_group
        run_id, system = self.run_id, self.system[0].digest
        for index, key in new:
            found = cases.get(key)
            if found is None:
                found = cases[key] = self._case(key)
            digest, complete, print_json_id, pack, case_key = found
            packs[pack] = None
            first_row = texts[index]
            bits = workload_bits(first_row)
            # The stats row's columns but the run id, one tuple per distinct case, system and workload bits in
            # the import: a case's info then holds no object of its rows (decoded key strings, the row's text),
            # which would otherwise stay in the heap among the freed rows until the batch's flush.
            info = infos.get((case_key, system, bits))
            if info is None:
                info = infos[case_key, system, bits] = (*case_key, digest, complete, print_json_id, system, bits)
                # the workload key's row (`_write_case_stats`): any row with these inputs gives the same key
                first_rows.setdefault((*case_key[:4], bits), first_row)
            group = groups[key] = open_group((run_id, info))
            digests[group] = digest

    def _case(self, key: tuple) -> tuple[str, int, int, str, tuple]:
        """(fingerprint digest, complete, its JSON's key_json id, "pack@version", the key as first met) of a
        case in this run's context."""
        print_, print_json_id, complete = self._fingerprint(key[0], key[1], key[2], key[4])
        return print_.digest, complete, print_json_id, f"{key[0]}@{key[1]}", key

    def _slow_row(self, number: int, text: str) -> tuple | None:
        """The exact checks, for rows the fast decoder refused: values, or None after recording problems."""
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            self._bad_line(number, "", f"not valid JSON ({exc.msg})")
            return None
        if type(row) is not dict:
            self._bad_line(number, "", "not a JSON object")
            return None
        try:
            return normalize_row(row)
        except BadRow as bad:
            for where, reason in bad.problems:
                self._bad_line(number, where, reason)
            return None

    def _bad_line(self, number: int, where: str, reason: str) -> None:
        field = f"line {number}" + (f": {where}" if where else "")
        self.problems.append(Problem(str(self.run_file), field, reason))

    def run(self, imported_at: str) -> ImportSummary | None:
        path = self.canonical
        if not os.path.isfile(self.run_file):  # a run file says a directory: one stat less per directory
            if not path.is_dir():
                self.problems.append(Problem(str(self.source.path), "", "not a result directory"))
            else:
                self.problems.append(Problem(str(self.run_file), "", "no such file"))
            return None
        before = len(self.problems)
        texts = (_read_text(path / HARDWARE_FILE, self.problems), _read_text(path / RUN_METADATA_FILE, self.problems))
        if len(self.problems) > before:
            return None
        # Runs from one machine and setup have the same two files: parsed, checked and turned into
        # the run's columns once per import (per directory it was ~1 ms of a 500-row directory's import).
        context = self.fingerprints.get(("run files", *texts))
        if context is None:
            context = self._run_context(*texts)
            if context is None:
                return None
            self.fingerprints[("run files", *texts)] = context
        self.hardware, self.run_metadata, self.run_fp_inputs, self.run_key, run_columns = context
        self.cases = self.fingerprints.setdefault(("cases", self.run_key), {})  # _open_groups
        self.infos = self.fingerprints.setdefault(("case infos", self.run_key), {})
        self.first_rows = self.fingerprints.setdefault(("workload rows",), {})
        label = self.source.label or path.name
        existed = self.conn.execute("SELECT id FROM runs WHERE result_dir = ?", (str(path),)).fetchone() \
            if self.may_exist else None  # into an empty runs table (a new registry) every run is new
        run_row = (str(path), label, self.source.source, imported_at, 0, 0, "", *run_columns)
        pending = self.pending
        if self.may_exist:
            run_id = self.run_id = self.conn.execute(RUN_UPSERT, run_row).fetchone()[0]
        else:
            # Into an empty runs table every run is new: its row waits with the pending rows (no upsert,
            # no statement of its own), with the id SQLite would have given it.
            run_id = self.run_id = pending.next_run_id
            pending.next_run_id += 1
            pending.runs.append((run_id, *run_row, None, None))
        if existed is not None:
            # The rows waiting are written first: their ids are then those of an import run by run (a
            # DELETE can free the highest rowid, which the next insert would reuse).
            self.pending.write()
            # Only a re-imported run has child rows (foreign keys are enforced,
            # so a new id has none). Skipping the DELETE for new runs matters:
            # while the row indexes are down for a bulk load it would scan the
            # whole table once per run, quadratic in a many-directory import.
            self.conn.execute("DELETE FROM result_rows WHERE run_id = ?", (run_id,))
            self.conn.execute("DELETE FROM result_case_stats WHERE run_id = ?", (run_id,))
        try:
            with self.run_file.open(encoding="utf-8") as handle:
                # Parse a chunk, then insert it (with other runs' rows, `_PendingRows`): measured faster
                # than interleaving row by row (or a reader thread), as each phase keeps its working set hot.
                self._read_rows(run_id, handle)
        except UnicodeDecodeError as exc:
            self.problems.append(Problem(str(self.run_file), "", f"not UTF-8 text ({exc.reason})"))
        if len(self.problems) > before:
            return None
        if self.rows == 0:
            self.problems.append(Problem(str(self.run_file), "", "has no result rows"))
            return None
        system, system_json = self.system  # its stats rows are written at the batch's flush
        counts = (self.rows, self.ok_rows, ", ".join(self.packs))
        if pending.runs and pending.runs[-1][0] == run_id and not self.may_exist:
            # its row not written yet (the last one waiting): it is written with its counts
            row = pending.runs[-1]
            pending.runs[-1] = (*row[:5], *counts, *row[8:-2], system.digest, system_json)
        else:
            self.conn.execute(RUN_UPDATE, (*counts, system.digest, system_json, run_id))
        return ImportSummary(run_id, str(path), label, self.rows, self.ok_rows, len(self.groups),
                             existed is not None)

    def _run_context(self, hardware_text: str | None, metadata_text: str | None) -> tuple | None:
        """(hardware, run metadata, fingerprint inputs, their key, the runs columns they fill) from the
        texts of hardware.json and run-metadata.json; None after recording their problems."""
        path, before = self.canonical, len(self.problems)
        hardware = _parse_object(hardware_text, path / HARDWARE_FILE, self.problems)
        run_metadata = _parse_object(metadata_text, path / RUN_METADATA_FILE, self.problems)
        if hardware is not None:
            self.problems.extend(check_hardware(hardware, path / HARDWARE_FILE))
        if run_metadata is not None:
            self.problems.extend(check_run_metadata(run_metadata, path / RUN_METADATA_FILE))
        if len(self.problems) > before:
            return None
        fp_inputs = fp.run_inputs(run_metadata, hardware)
        host = hardware or {}
        columns = (
            host.get("hostname"), host.get("platform"), host.get("chip") or host.get("cpu_model"),
            _gpu_models(hardware), host.get("ram_mb"),
            json.dumps(hardware) if hardware is not None else None,
            json.dumps(run_metadata) if run_metadata is not None else None,
            *metadata_anchors(run_metadata).values(), fp.hardware_class(hardware),
        )
        return hardware, run_metadata, fp_inputs, json.dumps(fp_inputs, sort_keys=True, default=str), columns

    def _system(self, model: str | None) -> tuple[fp.Key, str]:
        """The run's system key and its JSON, computed once per import for equal inputs (a run of many
        directories from one machine and model has one: computing it per directory cost ~1 ms each)."""
        inputs = ("system", self.run_key, fp.metadata_value(self.run_metadata, "model.sha256"), model)
        found = self.fingerprints.get(inputs)
        if found is None:
            system = fp.system_key(self.run_metadata, self.hardware, model)
            found = self.fingerprints[inputs] = (system, json.dumps(system.to_dict(), sort_keys=True))
        return found



def key_json_id(conn: sqlite3.Connection, cache: dict, text: str) -> int:
    """The key_json id of `text` (a fingerprint's or workload key's JSON), added if new; cached per import
    (`cache`: the import's fingerprints dict), so a distinct value costs one lookup an import."""
    found = cache.get(("key_json", text))
    if found is None:
        row = conn.execute("SELECT id FROM key_json WHERE json = ?", (text,)).fetchone()
        found = row[0] if row else conn.execute("INSERT INTO key_json (json) VALUES (?)", (text,)).lastrowid
        cache[("key_json", text)] = found
    return found


def _workload(conn: sqlite3.Connection, fingerprints: dict, inputs: tuple, first_row: str) -> tuple:
    """(digest, complete, key_json id) of a case's workload key. `inputs` (pack_id, pack_version, case_id,
    adapter, cache_state, workload bits) are its cache key: the bits are the first row's workload fields
    as raw JSON, a cache key, not a meaning — a differently ordered record is only a miss, computed
    from the full row."""
    pack_id, pack_version, case_id, _, cache_state, _ = inputs
    workload = fp.workload_key([json.loads(first_row)], case_spec(pack_id, pack_version, case_id),
                               cache_state=cache_state)
    return (workload.digest, int(workload.complete),
            key_json_id(conn, fingerprints, json.dumps(workload.to_dict(), sort_keys=True)))


def _write_case_stats(conn: sqlite3.Connection, batch: CaseBatch, fingerprints: dict) -> None:
    """The stats rows of every case in the batch, in the order the cases were first seen: assembled a
    column at a time (zip, in C). Workload keys are computed once per import for equal inputs (runs of
    one pack share them: a canonical dump + sha256 per case added up) and looked up per case in C; only
    a distinct input new to the import takes Python, in first-seen order (key_json ids follow it)."""
    infos, c = batch.flush()
    if not infos:
        return
    states = c["cache_state"]
    run_ids, shared = zip(*infos)
    head = list(zip(*shared))  # the case key (5), fingerprint digest, complete, JSON id, system digest, bits
    known = fingerprints.setdefault(("workloads",), {})
    inputs = list(zip(head[0], head[1], head[2], head[3], states, head[9]))
    found = list(map(known.get, inputs))  # one hash a case; a second pass only when some input is new
    if None in found:
        first_rows = fingerprints[("workload rows",)]  # _RunImporter._open_groups
        for key in dict.fromkeys(inputs):
            if key not in known:
                known[key] = _workload(conn, fingerprints, key, first_rows[(*key[:4], key[5])])
        found = list(map(known.__getitem__, inputs))
    workload = zip(*found)
    conn.executemany(STATS_INSERT, zip(
        run_ids, *head[:5], c["row_count"], c["ok_count"], c["scored_count"], c["passed_count"],
        *(c[name] for name in FIGURES[:-1]), c["prompt_token_rows"], c["cached_prompt_rows"],
        *head[5:8], *workload, head[8], states, c["decode_rate"],  # NaN medians (none reported) are stored as NULL
    ))


class _WorkloadBits(msgspec.Struct):
    """The fields of a row a workload key reads beyond the case's key (fingerprint.workload_key)."""

    request: msgspec.Raw = msgspec.Raw(b"")
    lane: msgspec.Raw = msgspec.Raw(b"")
    depth_tokens: msgspec.Raw = msgspec.Raw(b"")
    concurrency: msgspec.Raw = msgspec.Raw(b"")
    arrival_rate: msgspec.Raw = msgspec.Raw(b"")


_WORKLOAD_BITS = msgspec.json.Decoder(_WorkloadBits).decode
_WORKLOAD_FIELDS = tuple(f'"{name}"' for name in _WorkloadBits.__struct_fields__)
# The five quoted words in one scan of the row: five substring tests were ~2 µs on a 770-character row,
# once per run and case (100,000 cases in a 1M-row registry of 500-row directories); one search ~1.5 µs.
_NAMES_A_WORKLOAD_FIELD = re.compile("|".join(map(re.escape, _WORKLOAD_FIELDS))).search
_NO_WORKLOAD_BITS = (b"",) * len(_WORKLOAD_FIELDS)


def workload_bits(text: str) -> tuple[bytes, ...]:
    """A valid row's `_WorkloadBits` fields as raw JSON bytes (b"" where absent), in field order.

    A row naming none of them as a quoted word (most runs: no request record, no lane) has none: five
    substring tests (~0.5 µs on a 770-character row) instead of a second decode (~5 µs, once per run and
    case: ~1/10 of a row's import cost in a registry of many small runs). A quoted word also found inside
    a string only costs the decode. A key spelled with \\u escapes would name a field without the quoted
    word: a row holding any backslash-u takes the decode."""
    # No backslash at all (one memchr) says no backslash-u escape either: the two-character search cost ~0.9 µs a
    # case, a third of these tests; a row with any backslash (an escaped quote, a path) still takes it.
    if ("\\" not in text or "\\u" not in text) and _NAMES_A_WORKLOAD_FIELD(text) is None:
        return _NO_WORKLOAD_BITS
    return tuple(map(bytes, msgspec.structs.astuple(_WORKLOAD_BITS(text))))


def tune_for_bulk_write(conn: sqlite3.Connection) -> None:
    # Durability of a rebuildable index is worth less than import speed; the
    # rollback journal (not WAL) keeps the file a single self-contained artifact.
    # temp_store stays at its default: with temp files allowed, SQLite's sorter
    # packs records into one buffer, and CREATE INDEX measured faster than with
    # temp_store=MEMORY (one allocation per record).
    conn.execute("PRAGMA synchronous = OFF")
    # Big enough that a million-row import never spills dirty pages mid-transaction.
    conn.execute("PRAGMA cache_size = -1048576")  # 1 GiB, allocated only as pages are used


def import_into(conn: sqlite3.Connection, sources: list[RunSource]) -> list[ImportSummary]:
    """Import every source in one transaction; raise BenchpackError with all problems, writing nothing."""
    problems: list[Problem] = []
    summaries: list[ImportSummary] = []
    imported_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    seen: set[Path] = set()
    parents: dict[Path, Path] = {}
    fingerprints: dict = {}
    batch = CaseBatch()
    pending = _PendingRows(conn, batch)
    tune_for_bulk_write(conn)
    try:
        with gc_paused(), transaction(conn):  # imported rows form no cycles
            recreate = drop_row_indexes_if_empty(conn)
            may_exist = conn.execute("SELECT 1 FROM runs LIMIT 1").fetchone() is not None
            for source in sources:
                canonical = canonical_path(source.path, parents)
                if canonical in seen:
                    continue  # the same directory named twice is one run
                seen.add(canonical)
                summary = _RunImporter(conn, source, problems, fingerprints, pending, canonical,
                                       may_exist).run(imported_at)
                if summary is not None:
                    summaries.append(summary)
                if not problems and batch.rows + len(pending) >= STATS_BATCH_ROWS:
                    pending.write()
                    _write_case_stats(conn, batch, fingerprints)
            if problems:
                raise BenchpackError(_capped(problems))
            pending.write()
            _write_case_stats(conn, batch, fingerprints)
            if any(summary.replaced for summary in summaries):  # their old stats rows may have been the last users
                drop_unused_key_json(conn)
            for statement in recreate:
                conn.execute(statement)
        # Sampled statistics (cheap at any size) let the planner pick the narrowest index.
        conn.execute("PRAGMA analysis_limit = 1000")
        conn.execute("ANALYZE")
    except sqlite3.DatabaseError as exc:
        raise BenchpackError(Problem("registry", "", f"SQLite error: {exc}")) from None
    return summaries


def _capped(problems: list[Problem]) -> list[Problem]:
    if len(problems) <= MAX_REPORTED_PROBLEMS:
        return problems
    rest = len(problems) - MAX_REPORTED_PROBLEMS
    return problems[:MAX_REPORTED_PROBLEMS] + [Problem("registry import", "", f"... and {rest} more problems")]


def import_result_dirs(db: str | Path, sources: list[RunSource]) -> list[ImportSummary]:
    conn = open_for_write(db)
    try:
        return import_into(conn, sources)
    finally:
        conn.close()
