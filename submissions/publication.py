"""What an approved submission hands the catalogue: its runs as typed rows, and the provenance it earned.

The catalogue (`registry_site.catalogue.publishing.publish`) takes a `Publication`
and never looks back into submissions: the files are read here, the rows decoded
into the row contract's structs (`benchpack.results.contract.Row`) once, and the
provenance decided here from what this app knows (who uploaded it; the run
request a runner host executed).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import PurePosixPath

from benchpack.results.contract import ROW_DECODER
from benchpack.results.provenance import earned_provenance
from benchpack.results.resultdir import ResultDir
from registry_site.catalogue.publishing import Publication, PublishedResult, clip
from submissions.models import Submission


def _stored_files(submission: Submission) -> dict[str, dict[str, str]]:
    grouped: dict[str, dict[str, str]] = defaultdict(dict)
    for f in submission.files.all():
        grouped[f.run_label][PurePosixPath(f.path).name] = f.content
    return grouped


def _result_dir(label: str, files: dict[str, str]) -> ResultDir:
    rows = [json.loads(line) for line in files.get("run.jsonl", "").splitlines() if line.strip()]
    hardware = json.loads(files["hardware.json"]) if "hardware.json" in files else None
    metadata = json.loads(files["run-metadata.json"]) if "run-metadata.json" in files else None
    return ResultDir(path=PurePosixPath(label), rows=rows, hardware=hardware, run_metadata=metadata)


def result_dirs_of(submission: Submission) -> list[ResultDir]:
    """Rebuild ResultDir objects from a submission's stored compact files."""
    grouped = _stored_files(submission)
    return [_result_dir(label, grouped[label]) for label in sorted(grouped)]


def published_results_of(submission: Submission) -> list[PublishedResult]:
    """Each run of the submission with its rows as the contract's structs (validation already checked
    every row against the same contract, so a row that no longer decodes is a bug, and raises)."""
    grouped = _stored_files(submission)
    results = []
    for label in sorted(grouped):
        files = grouped[label]
        lines = [line for line in files.get("run.jsonl", "").splitlines() if line.strip()]
        results.append(PublishedResult(result=_result_dir(label, files),
                                       rows=[ROW_DECODER.decode(line) for line in lines]))
    return results


def publication_of(submission: Submission) -> Publication:
    earned, basis = earned_of(submission)
    return Publication(submission_id=submission.pk, results=published_results_of(submission),
                       claimed_provenance=submission.provenance or "", provenance=earned, provenance_basis=basis,
                       is_demo=submission.is_demo, source=(submission.summary or {}).get("source"))


def earned_of(submission: Submission) -> tuple[str, str]:
    """The provenance the server earns for a submission's runs, and why, from what it knows itself.

    Never the bundle's claim: an upload is self-reported (operator-curated when
    an operator uploaded it); a run executed by a registered runner host is
    runner-host (operator-curated when an operator queued it on a host an
    operator runs). Only the reproduction judge upgrades a run to
    independently-reproduced (submissions.runqueue.reproduction.mark_reproduction).
    """
    from accounts.operators import is_operator
    from submissions.runqueue.models import RunRequest

    request = (RunRequest.objects.filter(submission_id=submission.pk)
               .select_related("host__owner", "requested_by").first())
    if request is None:
        by_operator = is_operator(submission.submitter)
        earned = earned_provenance(uploaded_by_operator=by_operator)
        return earned, "uploaded by an operator" if by_operator else "uploaded; what the bundle says is not verified"
    queued_by_operator = is_operator(request.requested_by)
    host_by_operator = is_operator(request.host.owner)
    earned = earned_provenance(uploaded_by_operator=False, runner_host=request.host.name,
                               queued_by_operator=queued_by_operator, host_run_by_operator=host_by_operator)
    if request.requested_by_id == request.host.owner_id:
        who = "queued by its owner" + (" (an operator)" if queued_by_operator else "")
    else:
        who = "queued by an operator" if queued_by_operator else "queued by a user"
    return earned, clip(f"runner host {request.host.name}, {who}", "provenance_basis")
