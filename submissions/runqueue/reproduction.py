"""Reproducing a published run on matching hardware, and the verdict when it is approved.

Reproduce: an operator picks a runner host of the same hardware class whose
allowlists hold the same pack version, adapter, model (+ quantization) and
runtime (+ version); the request runs the pack the original measured, with
its repetitions.

When the result is approved (inside the approval transaction) it is compared
with the original case by case: the reproduction key must match (the
catalogue's `fingerprint_of`), then `benchpack.reporting.reproduction` checks D-013
parity and the medians within the documented tolerance. Every attempt is
kept as a `Reproduction` with its per-case numbers. Only an *independent*
attempt (a different owner and a different host than the original, see
`independence`) decides the original's badge: a match sets provenance
`independently-reproduced` on the reproduction and `reproduced` on the
original; a miss shows `not reproduced` with the numbers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from benchpack.reporting.reproduction import NOT_COMPARABLE, REPRODUCED, CaseVerdict, Tolerance, compare_cases, overall
from benchpack.results.provenance import INDEPENDENTLY_REPRODUCED
from registry_site.catalogue.models import PublishedRun
from registry_site.catalogue.publishing import fingerprint_of
from submissions.publication import result_dirs_of
from submissions.runqueue.models import HostEndpoint, HostPack, Reproduction, RunnerHost, RunRequest
from submissions.runqueue.services import RequestRefused, create_run_request

TOLERANCE = Tolerance()
INDEPENDENT_PROVENANCE = INDEPENDENTLY_REPRODUCED  # earned only here


@dataclass
class Target:
    host: RunnerHost
    endpoint: HostEndpoint
    pack: HostPack

    @property
    def value(self) -> str:
        return f"{self.host.name}|{self.endpoint.name}"


def system_of(run: PublishedRun) -> dict:
    from benchpack.results.run_metadata import effective  # the user's sections plus what the server reported

    metadata = effective(run.run_metadata)
    runtime = metadata.get("runtime") if isinstance(metadata.get("runtime"), dict) else {}
    model = metadata.get("model") if isinstance(metadata.get("model"), dict) else {}
    return {"pack_id": run.pack_id, "pack_version": run.pack_version, "model": run.model, "adapter": run.adapter,
            "hardware_class": run.hardware_class, "runtime_name": str(runtime.get("name") or ""),
            "runtime_version": str(runtime.get("version") or ""), "quantization": str(model.get("quantization") or "")}


def matching_targets(run: PublishedRun, user) -> tuple[list[Target], list[str]]:
    """Hosts `user` may use that can re-measure `run`, and why the others cannot."""
    wanted = system_of(run)
    targets, misses = [], []
    if not wanted["hardware_class"]:
        return [], ["the original's hardware class is unknown, so no host can be matched to it"]
    for host in RunnerHost.objects.requestable_by(user).prefetch_related("endpoints", "packs"):
        # The class an operator approved, never the host's own report; a host whose latest report
        # differs from it is not eligible until an operator looks again.
        if host.hardware_class != wanted["hardware_class"]:
            misses.append(f"{host.name}: hardware {host.hardware_class or 'not approved yet'}")
            continue
        if host.hardware_changed:
            misses.append(f"{host.name}: approved as {host.hardware_class} but reports {host.reported_hardware_class}")
            continue
        pack = next((p for p in host.packs.all() if p.enabled and (p.pack_id, p.version) ==
                     (wanted["pack_id"], wanted["pack_version"])), None)
        if pack is None:
            misses.append(f"{host.name}: {wanted['pack_id']} {wanted['pack_version']} is not on its pack allowlist")
            continue
        found = False
        for endpoint in host.endpoints.all():
            if (endpoint.enabled and endpoint.adapter == wanted["adapter"] and wanted["model"] in endpoint.model_names()
                    and endpoint.quantization_of(wanted["model"]) == wanted["quantization"]
                    and (endpoint.runtime_name, endpoint.runtime_version) == (wanted["runtime_name"], wanted["runtime_version"])):
                targets.append(Target(host, endpoint, pack))
                found = True
        if not found:
            misses.append(f"{host.name}: no endpoint serves {wanted['model']} ({wanted['quantization'] or 'quantization unknown'}) "
                          f"on {wanted['runtime_name']} {wanted['runtime_version']} via {wanted['adapter']}")
    return targets, misses


def repetitions_of(run: PublishedRun) -> int:
    per_case = Counter(run.rows.values_list("case", flat=True))
    return max(per_case.values()) if per_case else 1


def reproduce(run: PublishedRun, user, target_value: str) -> RunRequest:
    targets, _ = matching_targets(run, user)
    target = next((t for t in targets if t.value == target_value), None)
    if target is None:
        raise RequestRefused("that host and endpoint do not match this run's hardware class, pack, model and runtime")
    return create_run_request(
        user, host=target.host.name, endpoint=target.endpoint.name, model=run.model, pack=run.pack_id,
        pack_version=run.pack_version, repetitions=repetitions_of(run), reproduction_of=run,
        is_demo=run.is_demo,
    )


# --- the verdict, in the approval transaction ------------------------------------


def independence(original: PublishedRun, reproduction: PublishedRun, request: RunRequest | None = None) -> list[str]:
    """Why the reproduction is not independent of the original (empty: it is).

    Independence compares *owners*, from what the registry itself holds: the
    original's submitter (and, for a runner-host original, its host's owner)
    against the reproduction's submitter, the account that queued it and the
    owner of the host that ran it. One person on both sides is "the same
    owner", whoever queued what. Hosts compare by registration (a host's name
    in hardware.json is the host's word), and by that name as well.
    """
    reasons = []
    mine = RunRequest.objects.filter(submission_id=original.submission_id).select_related("host").first()
    request = request or RunRequest.objects.filter(submission_id=reproduction.submission_id).select_related("host").first()
    submitter = original.submission.submitter_id
    original_side = {submitter} | ({mine.host.owner_id} if mine else set())
    if reproduction.submission.submitter_id in original_side:
        reasons.append("reproduced by the same owner: the same submitter measured both"
                       if reproduction.submission.submitter_id == submitter else
                       "reproduced by the same owner: the original's host owner submitted the reproduction")
    elif request is not None and request.host.owner_id in original_side:
        reasons.append(f"reproduced by the same owner: runner host {request.host.name} belongs to the "
                       + ("original's submitter" if request.host.owner_id == submitter else "original's host owner"))
    elif request is not None and request.requested_by_id in original_side:
        reasons.append("reproduced by the same owner: the original's submitter queued the reproduction")
    if mine is not None and request is not None and mine.host_id == request.host_id:
        reasons.append(f"the same runner host ({request.host.name}) measured both")
    hosts = [(run.hardware or {}).get("hostname") for run in (original, reproduction)]
    if not hosts[0] or not hosts[1]:
        reasons.append("a host name is missing from hardware.json, so the hosts cannot be told apart")
    elif hosts[0] == hosts[1]:
        reasons.append(f"the same host ({hosts[0]}) measured both")
    return reasons


def _result(run: PublishedRun):
    return next((r for r in result_dirs_of(run.submission) if str(r.path) == run.label), None)


def _key_problems(original, reproduction, case: str) -> list[str]:
    mine, mine_fields = fingerprint_of(original, case)
    theirs, their_fields = fingerprint_of(reproduction, case)
    unknown = sorted(set(mine_fields.get("unknown", [])) | set(their_fields.get("unknown", [])))
    if unknown:
        return [f"reproduction key has unknown inputs ({', '.join(unknown)})"]
    if mine != theirs:
        differing = [f"{name}: {value!r} vs {their_fields['fields'].get(name)!r}"
                     for name, value in mine_fields["fields"].items() if their_fields["fields"].get(name) != value]
        return ["reproduction key differs (" + "; ".join(differing) + ")"]
    return []


def judge(original: PublishedRun, reproduction: PublishedRun) -> tuple[str, list[CaseVerdict]]:
    mine, theirs = _result(original), _result(reproduction)
    if mine is None or theirs is None:
        return NOT_COMPARABLE, []
    verdicts = compare_cases(mine, theirs, TOLERANCE)
    for verdict in verdicts:
        problems = _key_problems(mine, theirs, verdict.case)
        if mine.rows and theirs.rows and mine.rows[0].get("adapter") != theirs.rows[0].get("adapter"):
            problems.append("the adapters differ")
        if problems:
            verdict.verdict, verdict.reasons = NOT_COMPARABLE, problems + verdict.reasons
    return overall(verdicts), verdicts


def check_reproductions(submission, published: list[PublishedRun], actor=None) -> list[Reproduction]:
    """Called where a submission is approved and published: judge it if it re-measured a run."""
    request = RunRequest.objects.filter(submission=submission, reproduction_of__isnull=False).first()
    if request is None:
        return []
    original = request.reproduction_of
    recorded = []
    for run in published:
        verdict, cases = judge(original, run)
        reasons = independence(original, run, request)
        evidence = Reproduction.objects.create(
            original=original, reproduction=run, request=request, verdict=verdict, independent=not reasons,
            reasons=reasons + [r for c in cases if c.verdict == NOT_COMPARABLE for r in c.reasons],
            cases=[c.to_dict() for c in cases], tolerance=TOLERANCE.describe(),
        )
        if evidence.counts:
            mark_reproduction(original, run, verdict == REPRODUCED, actor=actor)
        recorded.append(evidence)
    return recorded


def mark_reproduction(original: PublishedRun, reproduction: PublishedRun, matched: bool, actor=None) -> None:
    """The catalogue side of a counted verdict: the original's badge, the
    reproduction's provenance on a match, and both runs' leaderboard rows
    (registry_site.catalogue.transitions.record_reproduction)."""
    from registry_site.catalogue.transitions import record_reproduction

    record_reproduction(original, reproduction, INDEPENDENT_PROVENANCE if matched else None,
                        reproduction_state_of(original))


def reproduction_state_of(run: PublishedRun) -> str:
    """The latest counted (independent, comparable) attempt whose reproducing run is still public decides."""
    deciding = (Reproduction.objects.filter(original=run, independent=True,
                                            verdict__in=(Reproduction.REPRODUCED, Reproduction.NOT_REPRODUCED),
                                            reproduction__in=PublishedRun.objects.public())
                .order_by("-created_at", "-pk").first())
    return deciding.verdict if deciding else ""


def refresh_badge(run: PublishedRun) -> None:
    from registry_site.catalogue.transitions import set_reproduction_state

    set_reproduction_state(run, reproduction_state_of(run))


def refresh_badges_reproduced_by(run: PublishedRun) -> None:
    """A withdrawn or unpublished reproduction no longer decides its original's badge."""
    for original in PublishedRun.objects.filter(pk__in=Reproduction.objects.filter(reproduction=run)
                                                .values("original_id")):
        refresh_badge(original)


def badge(run: PublishedRun) -> Reproduction | None:
    """The attempt that decides `run`'s badge: the latest independent, comparable one."""
    return next((r for r in run.reproductions.select_related("reproduction") if r.counts), None)


def summary(run: PublishedRun) -> dict:
    """The API's view: the badge with its evidence (per-case numbers), and what this run reproduces."""
    deciding = badge(run)
    reproduces = Reproduction.objects.filter(reproduction=run).first()
    return {
        "state": deciding.verdict if deciding else "",
        "evidence": None if deciding is None else {
            "run": deciding.reproduction_id, "url": f"/runs/{deciding.reproduction_id}/",
            "tolerance": deciding.tolerance, "cases": deciding.cases,
        },
        "reproduces": None if reproduces is None else {
            "run": reproduces.original_id, "verdict": reproduces.verdict, "independent": reproduces.independent,
            "reasons": reproduces.reasons,
        },
        "attempts": run.reproductions.count(),
    }
