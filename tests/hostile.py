"""Synthetic result directories for bundle tests, and the hostile corpus built from them."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import tarfile
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from benchpack.bundles.archives import ArchiveLimits
from benchpack.bundles.checks import BundleLimits
from tests.data_paths import REAL_RESULTS


SAFE_MODEL_CALL = {"schema_version": 1, "sequence": 1, "model": "test-model", "ok": True, "endpoint": "local-llama", "prompt_tokens": 12}


def row(case: str = "fix-repo", repetition: int = 1, **extra) -> dict:
    base = {
        "pack": {"id": "patch-from-failure", "version": "0.1.0"},
        "case": case,
        "adapter": "openai-chat",
        "endpoint": "http://127.0.0.1:8081/v1/chat/completions",
        "model": "qwen2.5-0.5b-instruct-q4_k_m",
        "ok": True,
        "timing": {"wall_s": 1.5, "ttft_s": 0.2, "prefill_tps": 500.0, "decode_tps": 40.0, "total_tps": 30.0},
        "tokens": {"prompt": 100, "output": 45, "cached_prompt": 0, "source": "usage"},
        "resources": {"memory_mb": None, "gpu_memory_mb": None},
        "scoring": {"mode": "verify-script", "passed": True},
        "raw": {"request_path": f"raw/{case}.request.json", "response_path": f"raw/{case}.response.json"},
        "patch": {"path": f"patch/{case}/rep-{repetition:03d}.diff"},
        "repetition": repetition,
    }
    base.update(extra)
    return base


def write_result_dir(path: Path, rows: list[dict] | None = None, model_calls: list[dict] | None = None) -> Path:
    """A repo-task style result dir with raw/, workspace/, task logs, a patch and model calls."""
    rows = rows if rows is not None else [row()]
    path.mkdir(parents=True)
    (path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (path / "hardware.json").write_text(json.dumps({"platform": "linux", "cpu_count": 2, "gpus": []}), encoding="utf-8")
    (path / "run-metadata.json").write_text(json.dumps({"runtime": {"name": "llama.cpp"}, "notes": "quiet host"}), encoding="utf-8")
    (path / "summary.md").write_text("# summary\n", encoding="utf-8")
    for r in rows:
        case, rep = r["case"], r.get("repetition", 1)
        for directory, name, text in [
            ("raw", f"{case}.request.json", '{"messages": []}'),
            ("raw", f"{case}.response.json", '{"choices": []}'),
            (f"patch/{case}", f"rep-{rep:03d}.diff", "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"),
            (f"task/{case}", f"rep-{rep:03d}.stdout.log", "applied\n"),
            (f"workspace/{case}/rep-{rep:03d}", "x.py", "b\n"),
        ]:
            (path / directory).mkdir(parents=True, exist_ok=True)
            (path / directory / name).write_text(text, encoding="utf-8")
        calls = model_calls if model_calls is not None else [SAFE_MODEL_CALL]
        (path / f"task/{case}/rep-{rep:03d}.model-calls.jsonl").write_text(
            "".join(json.dumps(call) + "\n" for call in calls), encoding="utf-8"
        )
    return path


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under root with its mode and size, to prove nothing else was written."""
    result = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        result[path.relative_to(root).as_posix()] = (info.st_mode, info.st_size if not path.is_dir() else 0)
    return result


# --- the hostile corpus -------------------------------------------------------------
#
# Every case builds one hostile bundle directory or archive inside a sandbox
# and names the check code that must reject it. Bundle cases start from a copy
# of a valid template bundle (see `template_bundle`) and break one thing.


LABEL = "run-a"
RUN = f"runs/{LABEL}"
PATCH = "patch/fix-repo/rep-001.diff"
CALLS = "task/fix-repo/rep-001.model-calls.jsonl"


@dataclass(frozen=True)
class HostileCase:
    id: str
    kind: str  # "bundle" (validate it) | "archive" (extract it)
    expected: str  # finding code / ArchiveError code that must appear
    build: Callable[[Path, Path], Path]  # (sandbox, template bundle) -> target
    secret: str | None = None  # must never be echoed
    bundle_limits: BundleLimits | None = None
    archive_limits: ArchiveLimits | None = None


def template_bundle(root: Path) -> Path:
    from benchpack.bundles.create import create_bundle

    source = write_result_dir(root / "source" / LABEL)
    return create_bundle([source], root / "template", "self-reported")


def _copy(sandbox: Path, template: Path) -> Path:
    bundle = sandbox / "bundle"
    shutil.copytree(template, bundle)
    return bundle


def _manifest(bundle: Path) -> dict:
    return json.loads((bundle / "bundle.json").read_text())


def _save_manifest(bundle: Path, manifest) -> None:
    (bundle / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")


def _entry(manifest: dict, path: str) -> dict:
    return next(entry for entry in manifest["runs"][0]["files"] if entry["path"] == path)


def _put(bundle: Path, run_relative: str, data: bytes, role: str | None = None) -> None:
    """Write a run file and list it with a correct hash, so only the targeted check can object."""
    target = bundle / RUN / run_relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    manifest = _manifest(bundle)
    files = manifest["runs"][0]["files"]
    entry = next((e for e in files if e["path"] == run_relative), None)
    if entry is None:
        entry = {"path": run_relative, "role": role}
        files.append(entry)
    entry.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    _save_manifest(bundle, manifest)


def _manifest_case(case_id: str, expected: str, mutate: Callable[[dict], None], secret: str | None = None) -> HostileCase:
    def build(sandbox: Path, template: Path) -> Path:
        bundle = _copy(sandbox, template)
        manifest = _manifest(bundle)
        mutate(manifest)
        _save_manifest(bundle, manifest)
        return bundle

    return HostileCase(case_id, "bundle", expected, build, secret)


def _bundle_case(case_id: str, expected: str, mutate: Callable[[Path], None], secret: str | None = None, limits: BundleLimits | None = None) -> HostileCase:
    def build(sandbox: Path, template: Path) -> Path:
        bundle = _copy(sandbox, template)
        mutate(bundle)
        return bundle

    return HostileCase(case_id, "bundle", expected, build, secret, bundle_limits=limits)


def _raw_manifest(text: bytes) -> Callable[[Path], None]:
    return lambda bundle: (bundle / "bundle.json").write_bytes(text)


def _set(path: list, value) -> Callable[[dict], None]:
    def mutate(manifest: dict) -> None:
        target = manifest
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _delete(key: str) -> Callable[[dict], None]:
    return lambda manifest: manifest.pop(key)


def _file_field(path: str, key: str, value) -> Callable[[dict], None]:
    return lambda manifest: _entry(manifest, path).__setitem__(key, value)


def _symlink(bundle: Path, run_relative: str, target: str) -> None:
    path = bundle / RUN / run_relative
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    path.symlink_to(target)


def _rows(*lines: str) -> Callable[[Path], None]:
    return lambda bundle: _put(bundle, "run.jsonl", "".join(line + "\n" for line in lines).encode())


def _row_with(**changes) -> str:
    value = row()
    for dotted, new in changes.items():
        target = value
        parts = dotted.split("__")
        for part in parts[:-1]:
            target = target[part]
        if new is _DROP:
            target.pop(parts[-1])
        else:
            target[parts[-1]] = new
    return json.dumps(value)


_DROP = object()

# kind -> (text carrying the secret, the part that must never be echoed).
# Built by concatenation so the test sources themselves scan clean.
SECRETS = {
    "bearer-token": ("Bearer " + "eyJhbGciOiJIUzI1NiJ9abcdefgh", "eyJhbGciOiJIUzI1NiJ9abcdefgh"),
    "basic-auth": ("Basic " + "YWRtaW46c3VwZXJzZWNyZXQ=", "YWRtaW46c3VwZXJzZWNyZXQ"),
    "credentialed-url": ("https://admin:" + "s3cretpass@db.example.com/", "s3cretpass"),
    "tokenized-query": ("https://api.example.com/v1?" + "api_key=live0123456789", "live0123456789"),
    "secret-json-field": ('"client_secret": "' + 'cs-0123456789abcdef"', "cs-0123456789abcdef"),
    "private-key": ("-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", "b3BlbnNzaC1rZXktdjEAAAAA"),
    "aws-access-key": ("AKIA" + "Z7Y6X5W4V3U2T1S0", "Z7Y6X5W4V3U2T1S0"),
    "github-token": ("ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8", "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"),
    "openai-key": ("sk-" + "T3BlbkFJabcdefghijklmnop0123", "T3BlbkFJabcdefghijklmnop0123"),
    "slack-token": ("xoxp-" + "2222222222-333333333333-abcdef", "2222222222-333333333333-abcdef"),
    "google-api-key": ("AIza" + "SyD-abcdefghijklmnopqrstuvwxyz01234", "SyD-abcdefghijklmnopqrstuvwxyz01234"),
}


def _secret_cases() -> list[HostileCase]:
    cases = []
    for kind, (secret, marker) in sorted(SECRETS.items()):
        placements = {
            "row-error": lambda b, s=secret: _rows(_row_with(ok=False, error=f"upstream said: {s}"))(b),
            "hardware": lambda b, s=secret: _put(b, "hardware.json", json.dumps({"platform": "linux", "note": s}).encode()),
            "patch": lambda b, s=secret: _put(b, PATCH, f"--- a/c.py\n+++ b/c.py\n@@ -1 +1 @@\n-x\n+{s}\n".encode()),
            "run-metadata": lambda b, s=secret: _put(b, "run-metadata.json", json.dumps({"notes": f"server: {s}"}).encode()),
        }
        for where, mutate in placements.items():
            cases.append(_bundle_case(f"secret-{kind}-in-{where}", f"secret.{kind}", mutate, secret=marker))
    for kind in ("github-token", "aws-access-key"):
        secret, marker = SECRETS[kind]

        def relabel(bundle: Path, label: str = "run-" + secret) -> None:
            (bundle / RUN).rename(bundle / "runs" / label)
            manifest = _manifest(bundle)
            manifest["runs"][0].update(label=label, path=f"runs/{label}")
            _save_manifest(bundle, manifest)

        cases.append(_bundle_case(f"secret-{kind}-as-run-label", f"secret.{kind}", relabel, secret=marker))
    return cases


def _unsafe_call(**record) -> Callable[[Path], None]:
    base = dict(SAFE_MODEL_CALL)
    base.update(record)
    return lambda bundle: _put(bundle, CALLS, (json.dumps(base) + "\n").encode())


def bundle_cases() -> list[HostileCase]:
    c: list[HostileCase] = []
    # manifest
    c.append(_bundle_case("manifest-missing", "manifest.missing", lambda b: (b / "bundle.json").unlink()))
    c.append(_bundle_case("manifest-symlink", "manifest.not-regular", lambda b: ((b / "bundle.json").unlink(), (b / "bundle.json").symlink_to("/etc/passwd"))))
    c.append(_bundle_case("manifest-directory", "manifest.not-regular", lambda b: ((b / "bundle.json").unlink(), (b / "bundle.json").mkdir())))
    c.append(_bundle_case("manifest-not-utf8", "manifest.not-utf8", _raw_manifest(b'{"format": "\xff\xfe"}')))
    for i, text in enumerate([b"", b"{", b'{"format": "benchpack-bundle",}', b"NaN garbage", b"\xef\xbb\xbf{}"]):
        c.append(_bundle_case(f"manifest-not-json-{i}", "manifest.not-json", _raw_manifest(text)))
    for i, value in enumerate([[], "bundle", 42, None]):
        c.append(_bundle_case(f"manifest-not-object-{i}", "manifest.schema", _raw_manifest(json.dumps(value).encode())))
    for value in (2, 0, "1", 1.5):
        c.append(_manifest_case(f"manifest-format-version-{value}", "manifest.unsupported-version", _set(["format_version"], value)))
    for key in ("format", "format_version", "provenance", "created_at", "tool", "runs"):
        c.append(_manifest_case(f"manifest-without-{key}", "manifest.schema", _delete(key)))
    for value in ("", "trusted", "SELF-REPORTED", None):
        c.append(_manifest_case(f"manifest-provenance-{value}", "manifest.schema", _set(["provenance"], value)))
    c.append(_manifest_case("manifest-extra-field", "manifest.schema", _set(["source_host"], "/home/alice/results")))
    c.append(_manifest_case("manifest-format-name", "manifest.schema", _set(["format"], "zip-bundle")))
    c.append(_manifest_case("manifest-no-runs", "manifest.schema", _set(["runs"], [])))
    c.append(_manifest_case("manifest-runs-object", "manifest.schema", _set(["runs"], {"run-a": {}})))
    for value in ("yesterday", "2026-01-01 10:00:00", 1764460800):
        c.append(_manifest_case(f"manifest-created-at-{value}", "manifest.schema", _set(["created_at"], value)))
    c.append(_manifest_case("manifest-tool-name", "manifest.schema", _set(["tool", "name"], "other")))
    c.append(_manifest_case("manifest-tool-version-shell", "manifest.schema", _set(["tool", "version"], "1.0; rm -rf /")))
    c.append(_manifest_case("file-role-unknown", "manifest.schema", _file_field("run.jsonl", "role", "raw")))
    for value in ("ABC", "0" * 63, 5):
        c.append(_manifest_case(f"file-sha256-{value}", "manifest.schema", _file_field("run.jsonl", "sha256", value)))
    for value in (-1, "12", 1.5):
        c.append(_manifest_case(f"file-bytes-{value}", "manifest.schema", _file_field("run.jsonl", "bytes", value)))
    c.append(_manifest_case("file-without-hash", "manifest.schema", lambda m: _entry(m, "run.jsonl").pop("sha256")))
    c.append(_manifest_case("run-without-files", "manifest.schema", _set(["runs", 0, "files"], [])))
    c.append(_manifest_case("omitted-bad-reason", "manifest.schema", lambda m: m["runs"][0]["omitted"][0].update(reason="secret")))
    for label in ("..", ".hidden", "a/b", "", "x" * 200, "run a", "-run"):
        c.append(_manifest_case(f"label-{label[:12]!r}", "manifest.schema", _set(["runs", 0, "label"], label)))
    # paths and roles
    for i, path in enumerate(["/etc/passwd", "C:/Windows/win.ini", "/run.jsonl"]):
        c.append(_manifest_case(f"path-absolute-{i}", "path.absolute", _file_field("run.jsonl", "path", path)))
    for i, path in enumerate(["../../../etc/passwd", "patch/../../x.diff", "..", "task/fix-repo/../../../../etc/shadow"]):
        c.append(_manifest_case(f"path-traversal-{i}", "path.traversal", _file_field(PATCH, "path", path)))
    c.append(_manifest_case("omitted-path-traversal", "path.traversal", lambda m: m["runs"][0]["omitted"][0].update(path="../../etc/passwd")))
    c.append(_manifest_case("omitted-path-absolute", "path.absolute", lambda m: m["runs"][0]["omitted"][0].update(path="/home/alice/raw.json")))
    for i, path in enumerate(["patch\\fix-repo\\rep-001.diff", "run.jsonl\x00.txt", "run\x1b.jsonl", "patch//rep-001.diff", "./run.jsonl", "patch/fix-repo/"]):
        c.append(_manifest_case(f"path-invalid-{i}", "path.invalid", _file_field(PATCH, "path", path)))
    for i, (path, role) in enumerate([("run.jsonl", "hardware"), ("hardware.json", "run"), (PATCH, "model-calls"), (CALLS, "patch"), ("run-metadata.json", "hardware")]):
        c.append(_manifest_case(f"role-mismatch-{i}", "path.role-mismatch", _file_field(path, "role", role)))
    c.append(_bundle_case("role-for-unknown-path", "path.role-mismatch", lambda b: _put(b, "notes.txt", b"hello\n", role="run")))
    c.append(_bundle_case("role-patch-wrong-name", "path.role-mismatch", lambda b: _put(b, "patch/fix-repo/evil.sh", b"echo\n", role="patch")))
    c.append(_bundle_case("role-raw-payload", "path.role-mismatch", lambda b: _put(b, "raw/fix-repo.response.json", b"{}", role="run-metadata")))
    for i, value in enumerate(["runs/other", "../runs/run-a", "/runs/run-a", "runs/run-a/.."]):
        c.append(_manifest_case(f"run-path-mismatch-{i}", "path.run-mismatch", _set(["runs", 0, "path"], value)))
    c.append(_manifest_case("duplicate-label", "manifest.duplicate-label", lambda m: m["runs"].append(json.loads(json.dumps(m["runs"][0])))))
    c.append(_manifest_case("duplicate-file", "path.duplicate", lambda m: m["runs"][0]["files"].append(dict(_entry(m, PATCH)))))
    c.append(_manifest_case("duplicate-file-by-case", "path.duplicate", lambda m: m["runs"][0]["files"].append(dict(_entry(m, PATCH), path="patch/Fix-repo/rep-001.diff"))))
    c.append(_manifest_case("no-run-file", "path.run-file", lambda m: m["runs"][0]["files"].remove(_entry(m, "run.jsonl"))))
    c.append(_manifest_case("listed-but-missing", "path.missing", lambda m: m["runs"][0]["files"].append(dict(_entry(m, PATCH), path="patch/other/rep-001.diff"))))
    c.append(_bundle_case("file-symlink-outside", "path.symlink", lambda b: _symlink(b, "hardware.json", "/etc/passwd")))
    c.append(_bundle_case("file-symlink-inside", "path.symlink", lambda b: _symlink(b, "hardware.json", "run-metadata.json")))
    c.append(_bundle_case("parent-dir-symlink", "path.symlink", lambda b: _symlink(b, "patch", "/etc")))
    c.append(_bundle_case("run-dir-symlink", "path.symlink", lambda b: (shutil.move(str(b / RUN), str(b / "elsewhere")), (b / RUN).symlink_to(b / "elsewhere"))))
    c.append(_bundle_case("listed-file-is-directory", "path.not-regular", lambda b: ((b / RUN / "hardware.json").unlink(), (b / RUN / "hardware.json").mkdir())))
    c.append(_bundle_case("listed-file-is-fifo", "path.not-regular", lambda b: ((b / RUN / "hardware.json").unlink(), os.mkfifo(b / RUN / "hardware.json"))))
    c.append(_bundle_case("parent-is-file", "path.missing", lambda b: (shutil.rmtree(b / RUN / "patch"), (b / RUN / "patch").write_text("x"))))
    # unlisted content
    c.append(_bundle_case("unlisted-root-file", "file.unlisted", lambda b: (b / "README.txt").write_text("hi")))
    c.append(_bundle_case("unlisted-run-file", "file.unlisted", lambda b: (b / RUN / "summary.md").write_text("# hi")))
    c.append(_bundle_case("unlisted-hidden-file", "file.unlisted", lambda b: (b / RUN / ".env").write_text("X=1")))
    c.append(_bundle_case("unlisted-raw-dir", "file.unlisted", lambda b: ((b / RUN / "raw").mkdir(), (b / RUN / "raw" / "a.json").write_text("{}"))))
    c.append(_bundle_case("unlisted-symlink", "path.symlink", lambda b: (b / "link").symlink_to("/etc/passwd")))
    c.append(_bundle_case("unlisted-dir-symlink", "path.symlink", lambda b: (b / "runs" / "escape").symlink_to("/")))
    c.append(_bundle_case("unlisted-fifo", "path.not-regular", lambda b: os.mkfifo(b / "pipe")))
    # hashes and sizes
    for path in ("run.jsonl", "hardware.json", "run-metadata.json", PATCH, CALLS):
        def flip(bundle: Path, path: str = path) -> None:
            target = bundle / RUN / path
            data = bytearray(target.read_bytes())
            data[len(data) // 2] = ord("#") if data[len(data) // 2] != ord("#") else ord("%")
            target.write_bytes(bytes(data))

        c.append(_bundle_case(f"hash-mismatch-{path}", "hash.mismatch", flip))
        c.append(_bundle_case(f"size-mismatch-{path}", "size.mismatch", lambda b, p=path: (b / RUN / p).open("ab").write(b"\n")))
    # text
    for path in ("run.jsonl", "hardware.json", PATCH, CALLS):
        c.append(_bundle_case(f"not-utf8-{path}", "text.not-utf8", lambda b, p=path: _put(b, p, (b / RUN / p).read_bytes() + b"\xc3\x28\n")))
    # rows
    c.append(_bundle_case("row-not-json", "row.not-json", _rows(_row_with(), "{not json")))
    c.append(_bundle_case("row-truncated", "row.not-json", _rows(_row_with()[:-20])))
    for i, line in enumerate(["[1, 2]", '"row"', "42", "null"]):
        c.append(_bundle_case(f"row-not-object-{i}", "row.not-object", _rows(line)))
    for name, changes in {
        "ok-string": {"ok": "yes"},
        "no-pack": {"pack": _DROP},
        "no-case": {"case": _DROP},
        "no-model": {"model": _DROP},
        "empty-case": {"case": ""},
        "pack-version-int": {"pack__version": 1},
        "negative-tokens": {"tokens__prompt": -5},
        "float-tokens": {"tokens__output": 4.5},
        "timing-string": {"timing__wall_s": "fast"},
        "negative-time": {"timing__ttft_s": -1.0},
        "repetition-zero": {"repetition": 0},
        "passed-string": {"scoring__passed": "yes"},
        "scoring-no-mode": {"scoring__mode": _DROP},
        "tokens-list": {"tokens": [1, 2]},
        "error-object": {"error": {"message": "x"}},
    }.items():
        c.append(_bundle_case(f"row-schema-{name}", "row.schema", _rows(_row_with(), _row_with(**changes))))
    c.append(_bundle_case("rows-empty", "rows.empty", _rows()))
    c.append(_bundle_case("rows-blank", "rows.empty", _rows("", "   ")))
    # metadata
    c.append(_bundle_case("hardware-array", "metadata.not-object", lambda b: _put(b, "hardware.json", b"[]")))
    c.append(_bundle_case("hardware-string", "metadata.not-object", lambda b: _put(b, "hardware.json", b'"linux"')))
    c.append(_bundle_case("hardware-not-json", "metadata.not-json", lambda b: _put(b, "hardware.json", b"{platform: linux}")))
    c.append(_bundle_case("hardware-gpus-string", "metadata.schema", lambda b: _put(b, "hardware.json", b'{"gpus": "none"}')))
    for name, value in {"runtime-string": {"runtime": "llama.cpp"}, "notes-int": {"notes": 3}, "model-list": {"model": ["q4"]}, "conditions-number": {"operating_conditions": 1}}.items():
        c.append(_bundle_case(f"run-metadata-{name}", "metadata.schema", lambda b, v=value: _put(b, "run-metadata.json", json.dumps(v).encode())))
    # model-call logs
    for name, record in {
        "extra-prompt": {"prompt": "full prompt text"},
        "headers": {"headers": {"x": "y"}},
        "endpoint-url": {"endpoint": "http://127.0.0.1:8080/v1"},
        "endpoint-query": {"endpoint": "local?debug=1"},
        "endpoint-userinfo": {"endpoint": "user@host"},
        "model-control-char": {"model": "qwen\x1b[31m"},
        "model-line-separator": {"model": "qwen\u2028next"},
        "model-too-long": {"model": "m" * 300},
        "sequence-zero": {"sequence": 0},
        "sequence-bool": {"sequence": True},
        "schema-version-2": {"schema_version": 2},
        "ok-string": {"ok": "true"},
        "tokens-negative": {"prompt_tokens": -1},
        "duration-negative": {"duration_s": -0.5},
    }.items():
        c.append(_bundle_case(f"model-calls-{name}", "model-calls.unsafe", _unsafe_call(**record)))
    c.append(_bundle_case("model-calls-not-json", "model-calls.unsafe", lambda b: _put(b, CALLS, b"not json\n")))
    c.append(_bundle_case("model-calls-array", "model-calls.unsafe", lambda b: _put(b, CALLS, b"[1]\n")))
    # limits
    big = BundleLimits(max_file_bytes=2_000)
    c.append(_bundle_case("limit-file-size", "limit.file-size", lambda b: _put(b, PATCH, b"+" * 5_000 + b"\n"), limits=big))
    c.append(_bundle_case("limit-total-size", "limit.total-size", lambda b: None, limits=BundleLimits(max_total_bytes=500)))
    c.append(_bundle_case("limit-rows", "limit.rows", _rows(*[_row_with()] * 5), limits=BundleLimits(max_rows=3)))
    c.append(_bundle_case("limit-file-count", "limit.file-count", lambda b: None, limits=BundleLimits(max_files=2)))
    c.append(_bundle_case("limit-unlisted-flood", "limit.file-count", lambda b: [(b / f"f{i}").write_text("") for i in range(300)], limits=BundleLimits(max_files=10)))
    c.append(_bundle_case("limit-run-count", "limit.run-count", lambda b: None, limits=BundleLimits(max_runs=0)))
    c.append(_bundle_case("limit-manifest-size", "limit.file-size", lambda b: None, limits=BundleLimits(max_file_bytes=100)))
    return c + _secret_cases()


# --- hostile archives ------------------------------------------------------------


def _tar(members: list[tarfile.TarInfo | tuple[str, bytes]], compress: str = "gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=f"w:{compress}", format=tarfile.GNU_FORMAT) as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
            else:
                info = tarfile.TarInfo(member[0])
                info.size = len(member[1])
                tar.addfile(info, io.BytesIO(member[1]))
    return buffer.getvalue()


def _zip(members: list[zipfile.ZipInfo | tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are the point
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for member in members:
                if isinstance(member, zipfile.ZipInfo):
                    archive.writestr(member, b"payload")
                else:
                    archive.writestr(member[0], member[1])
    return buffer.getvalue()


def _tar_info(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


def _zip_info(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = mode << 16
    return info


def _archive_case(case_id: str, expected: str, suffix: str, data: Callable[[], bytes], limits: ArchiveLimits | None = None) -> HostileCase:
    def build(sandbox: Path, template: Path) -> Path:
        path = sandbox / f"upload{suffix}"
        path.write_bytes(data())
        return path

    return HostileCase(case_id, "archive", expected, build, archive_limits=limits)


def _both(case_id: str, expected: str, members: list, limits: ArchiveLimits | None = None) -> list[HostileCase]:
    return [
        _archive_case(f"tar-{case_id}", expected, ".tar.gz", lambda: _tar(members), limits),
        _archive_case(f"zip-{case_id}", expected, ".zip", lambda: _zip(members), limits),
    ]


def _zip_with_raw_name(placeholder: str, raw: bytes) -> bytes:
    data = _zip([(placeholder, b"x")])
    assert len(placeholder.encode()) == len(raw)
    return data.replace(placeholder.encode(), raw)


def _flip_compressed_byte() -> bytes:
    data = bytearray(_zip([("run.jsonl", b"a fairly long line of text " * 40)]))
    data[60] ^= 0xFF
    return bytes(data)


def archive_cases() -> list[HostileCase]:
    c: list[HostileCase] = []
    ok = ("bundle.json", b"{}")
    for i, name in enumerate(["../evil.txt", "a/../../evil.txt", "runs/../../../tmp/evil", ".."]):
        c += _both(f"slip-{i}", "archive.path-traversal", [ok, (name, b"pwned")])
    for i, name in enumerate(["/tmp/evil.txt", "/etc/cron.d/evil"]):
        c += _both(f"absolute-{i}", "archive.absolute-path", [ok, (name, b"pwned")])
    c.append(_archive_case("zip-drive-letter", "archive.absolute-path", ".zip", lambda: _zip([("C:/evil.txt", b"x")])))
    for i, name in enumerate(["..\\evil.txt", "runs\\x"]):
        c += _both(f"backslash-{i}", "archive.bad-name", [(name, b"x")])
    for i, name in enumerate(["a//b", "./a", "a/./b", "evil\x07.txt", "x" * 600, "/".join(["d"] * 40)]):
        c += _both(f"bad-name-{i}", "archive.bad-name", [(name, b"x")])
    c.append(_archive_case("zip-nul-name", "archive.bad-name", ".zip", lambda: _zip_with_raw_name("evilXtxt.json", b"evil\x00txt.json")))
    c.append(_archive_case("tar-symlink-outside", "archive.link", ".tar.gz", lambda: _tar([_tar_info("link", tarfile.SYMTYPE, "/etc/passwd")])))
    c.append(_archive_case("tar-symlink-then-write", "archive.link", ".tar.gz", lambda: _tar([_tar_info("d", tarfile.SYMTYPE, "/tmp"), ("d/evil", b"x")])))
    c.append(_archive_case("tar-hardlink-outside", "archive.link", ".tar.gz", lambda: _tar([_tar_info("h", tarfile.LNKTYPE, "/etc/shadow")])))
    c.append(_archive_case("tar-hardlink-inside", "archive.link", ".tar.gz", lambda: _tar([ok, _tar_info("h", tarfile.LNKTYPE, "bundle.json")])))
    c.append(_archive_case("zip-symlink", "archive.link", ".zip", lambda: _zip([_zip_info("link", stat.S_IFLNK | 0o777)])))
    for name, kind in (("char", tarfile.CHRTYPE), ("block", tarfile.BLKTYPE), ("fifo", tarfile.FIFOTYPE)):
        c.append(_archive_case(f"tar-{name}-device", "archive.special-file", ".tar.gz", lambda k=kind: _tar([_tar_info("dev", k)])))
    c.append(_archive_case("tar-gnu-sparse", "archive.special-file", ".tar.gz", lambda: _tar([_tar_info("s", tarfile.GNUTYPE_SPARSE)])))
    for name, mode in (("fifo", stat.S_IFIFO), ("socket", stat.S_IFSOCK), ("char", stat.S_IFCHR)):
        c.append(_archive_case(f"zip-{name}", "archive.special-file", ".zip", lambda m=mode: _zip([_zip_info("dev", m | 0o644)])))
    c += _both("duplicate", "archive.duplicate-name", [ok, ("bundle.json", b"{}")])
    c += _both("duplicate-by-case", "archive.duplicate-name", [ok, ("BUNDLE.json", b"{}")])
    c += _both("duplicate-by-normalisation", "archive.duplicate-name", [("caf\u00e9", b"1"), ("cafe\u0301", b"2")])
    c += _both("file-then-dir", "archive.duplicate-name", [("runs", b"x"), ("runs/a", b"y")])
    c += _both("dir-then-file", "archive.duplicate-name", [("runs/a", b"y"), ("runs", b"x")])
    few = ArchiveLimits(max_members=10)
    c += _both("too-many-members", "archive.too-many-members", [(f"f{i}", b"x") for i in range(11)], few)
    zeros = [("zeros.bin", b"\0" * 6_000_000)]
    c += _both("bomb", "archive.compression-ratio", zeros)
    c += _both("bomb-split", "archive.compression-ratio", [(f"z{i}", b"\0" * 600_000) for i in range(10)])
    noise = [("noise.bin", os.urandom(300_000))]
    c += _both("too-large", "archive.too-large", noise, ArchiveLimits(max_total_bytes=200_000, max_member_bytes=10**9))
    c += _both("member-too-large", "archive.member-too-large", noise, ArchiveLimits(max_member_bytes=100_000))
    c.append(_archive_case("tar-long-name-traversal", "archive.path-traversal", ".tar.gz", lambda: _tar([("a/" * 60 + "../" * 70 + "evil", b"x")])))
    c.append(_archive_case("tar-truncated", "archive.corrupt", ".tar.gz", lambda: _tar([("a.txt", os.urandom(5000))])[:-300]))
    c.append(_archive_case("zip-truncated", "archive.corrupt", ".zip", lambda: _zip([("a.txt", os.urandom(5000))])[:-40]))
    c.append(_archive_case("tar-random-bytes", "archive.corrupt", ".tar.gz", lambda: os.urandom(4096)))
    c.append(_archive_case("zip-random-bytes", "archive.corrupt", ".zip", lambda: os.urandom(4096)))
    c.append(_archive_case("tar-empty-file", "archive.corrupt", ".tar.gz", lambda: b""))
    c.append(_archive_case("zip-bad-crc", "archive.corrupt", ".zip", _flip_compressed_byte))
    c.append(_archive_case("zip-as-tar", "archive.corrupt", ".tar.gz", lambda: _zip([ok])))
    c.append(_archive_case("tar-bz2-as-tgz", "archive.corrupt", ".tar.gz", lambda: _tar([ok], compress="bz2")))

    def encrypted() -> bytes:
        # zipfile cannot write encrypted members; set the flag bit in both headers.
        data = bytearray(_zip([ok]))
        local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
        data[local + 6] |= 0x1
        data[central + 8] |= 0x1
        return bytes(data)

    c.append(_archive_case("zip-encrypted", "archive.encrypted", ".zip", encrypted))
    c.append(_archive_case("unsupported-suffix", "archive.unsupported-type", ".rar", lambda: _zip([ok])))
    return c


def _packed_hostile_bundle(case: HostileCase, suffix: str) -> HostileCase:
    """A well-formed archive that carries a hostile bundle: unpacking works, validation must not."""
    from benchpack.bundles.archives import pack_archive, safe_extract

    def build(sandbox: Path, template: Path) -> Path:
        staging = sandbox / "staging"
        staging.mkdir()
        bundle = case.build(staging, template)
        archive = pack_archive(bundle, sandbox / f"upload{suffix}")
        shutil.rmtree(staging)
        return safe_extract(archive, sandbox / "unpacked")

    return HostileCase(f"packed-{suffix[1:]}-{case.id}", "bundle", case.expected, build, case.secret)


def hostile_cases() -> list[HostileCase]:
    bundles = bundle_cases()
    packable = [case for case in bundles if case.id.startswith(("secret-", "row-schema-", "role-mismatch-", "hash-mismatch-"))]
    packed = [_packed_hostile_bundle(case, suffix) for case in packable[::3] for suffix in (".tar.gz", ".zip")]
    return bundles + archive_cases() + packed
