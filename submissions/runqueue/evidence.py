"""A runner host's bundle checked against what the registry itself holds about the run.

A host's worker sends a bundle at the end of a claimed run (claims.finish);
whatever is in it was written by the host, so nothing in it is evidence on
its own. Before such a bundle may wait for review it must agree with three
things the host could not change afterwards:

- the run request: the pack and version the request named, the model, the
  adapter, the endpoint URL, and the runtime the operator registered for
  that endpoint (an operator's words, stored before the run);
- the host's approved hardware class (set by an operator, never from the
  host's own reports: hosts.approve_hardware);
- the rows the worker streamed through `progress/` during the claimed
  attempt (RunRequestRow): the rows published are exactly those rows, in
  order. A row the registry never saw during the run is refused.

Any mismatch refuses the submission (`invalid`, code `runner.evidence`, the
reason says which field and what was expected), so it never reaches review
and is never published as `runner-host`.

What this does NOT prove: a host that streams fabricated rows while it runs
is believed about their timings — the streamed rows are the host's word too,
only fixed earlier. docs/runner-hosts.md ("What each badge rests on") says
who could forge what.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath

from benchpack.registry.fingerprint import hardware_class
from benchpack.results.run_metadata import effective

CODE = "runner.evidence"


def refusal(submission, files) -> str | None:
    """Why this runner-host submission's bundle disagrees with the registry's evidence (None: it agrees,
    or the submission is an upload, which this does not concern). `files` are validation.CompactFile."""
    from submissions.runqueue.models import RunRequest

    request = (RunRequest.objects.filter(submission_id=submission.pk)
               .select_related("host", "endpoint", "pack").first())
    if request is None:
        return None
    runs: dict[str, dict[str, str]] = {}
    for f in files:
        runs.setdefault(f.run_label, {})[PurePosixPath(f.path).name] = f.content
    if len(runs) != 1:
        return f"the bundle holds {len(runs)} runs; a run request measures exactly one"
    [(label, content)] = runs.items()
    try:
        rows = [json.loads(line) for line in content.get("run.jsonl", "").splitlines() if line.strip()]
        hardware = json.loads(content["hardware.json"]) if "hardware.json" in content else None
        metadata = json.loads(content["run-metadata.json"]) if "run-metadata.json" in content else None
    except ValueError as exc:  # validated before, so only a defect would land here
        return f"{label}: unreadable ({exc})"
    return (_request_refusal(request, label, rows, metadata) or _hardware_refusal(request, label, hardware)
            or _streamed_refusal(request, label, rows))


def _request_refusal(request, label: str, rows: list[dict], metadata: dict | None) -> str | None:
    endpoint, pack = request.endpoint, request.pack
    wanted_url = endpoint.url.rstrip("/")
    for number, row in enumerate(rows, 1):
        got_pack = row.get("pack") if isinstance(row.get("pack"), dict) else {}
        checks = (
            ("pack.id", got_pack.get("id"), pack.pack_id),
            ("pack.version", got_pack.get("version"), pack.version),
            ("model", row.get("model"), request.model),
            ("adapter", row.get("adapter"), endpoint.adapter),
        )
        for name, got, wanted in checks:
            if got != wanted:
                return f"{label}/run.jsonl row {number}: {name} is {got!r}, the run request named {wanted!r}"
        url = row.get("endpoint")
        if not (isinstance(url, str) and (url == wanted_url or url.startswith(wanted_url + "/"))):
            return (f"{label}/run.jsonl row {number}: endpoint is {url!r}, not the allowlisted endpoint "
                    f"{endpoint.url} of the run request")
    runtime = effective(metadata).get("runtime") if isinstance(metadata, dict) else None
    runtime = runtime if isinstance(runtime, dict) else {}
    for name, wanted in (("name", endpoint.runtime_name), ("version", endpoint.runtime_version)):
        if str(runtime.get(name) or "") != wanted:
            return (f"{label}/run-metadata.json: runtime.{name} is {runtime.get(name)!r}; the endpoint "
                    f"{endpoint} is registered as {endpoint.runtime_name} {endpoint.runtime_version}")
    quantization = endpoint.quantization_of(request.model)
    model = effective(metadata).get("model") if isinstance(metadata, dict) else None
    got = str((model or {}).get("quantization") or "") if isinstance(model, dict) else ""
    if quantization and got != quantization:
        return (f"{label}/run-metadata.json: model.quantization is {got!r}; {request.model} is registered at "
                f"{endpoint} as {quantization!r}")
    return None


def _hardware_refusal(request, label: str, hardware: dict | None) -> str | None:
    approved = request.host.hardware_class
    if not approved:
        return (f"runner host {request.host.name} has no approved hardware class (an operator approves it: "
                f"manage.py runner_host approve {request.host.name}); its results are not published as runner-host")
    got = hardware_class(hardware)
    if got != approved:
        return (f"{label}/hardware.json: hardware class {got or 'unknown'}, but runner host {request.host.name} is "
                f"approved as {approved}")
    return None


def _streamed_refusal(request, label: str, rows: list[dict]) -> str | None:
    streamed = list(request.rows.filter(attempt=request.attempts).order_by("index").values_list("index", "raw"))
    if [index for index, _ in streamed] != list(range(len(streamed))):
        return f"the rows streamed during attempt {request.attempts} are not numbered 0..{len(streamed) - 1}"
    if len(streamed) != len(rows):
        return (f"{label}/run.jsonl has {len(rows)} rows; the worker streamed {len(streamed)} during the run "
                f"(attempt {request.attempts}): the rows published are the rows streamed")
    for number, (row, (_, raw)) in enumerate(zip(rows, streamed), 1):
        if row != raw:
            differing = sorted(k for k in set(row) | set(raw) if row.get(k) != raw.get(k))
            return (f"{label}/run.jsonl row {number} differs from the row streamed during the run "
                    f"({', '.join(differing[:5])}): the rows published are the rows streamed")
    return None
