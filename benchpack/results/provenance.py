"""Provenance: what a bundle may *claim*, and what the registry *earns* for a run.

The one definition of the provenance words (the bundle schema, the CLI, the
registry's filters and leaderboards all read it from here).

A bundle's `provenance` is the submitter's claim. It is kept and shown as
"claimed", never published or filtered on as if it were verified. The
provenance a run is published with is earned: the registry derives it from
what it knows itself (who uploaded the bundle, which registered runner host
executed the run and who queued it, what the reproduction judge decided),
through `earned_provenance` below. PyPI draws the same line between
uploader-supplied metadata ("unverified") and attestations it verifies.

This module is pure: the registry passes in facts, it never imports Django.
"""

from __future__ import annotations

from typing import Any

SELF_REPORTED = "self-reported"
RUNNER_HOST = "runner-host"
OPERATOR_CURATED = "operator-curated"
INDEPENDENTLY_REPRODUCED = "independently-reproduced"

# What `benchpack registry bundle create --provenance` accepts and a bundle's
# manifest may say: a claim, never trusted as such.
CLAIMS = (SELF_REPORTED, OPERATOR_CURATED, INDEPENDENTLY_REPRODUCED)
# What the registry publishes, weakest first (the rank a leaderboard row takes
# the strongest of).
EARNED = (SELF_REPORTED, RUNNER_HOST, OPERATOR_CURATED, INDEPENDENTLY_REPRODUCED)
RANK = {name: rank for rank, name in enumerate(EARNED)}

# The scripted endpoint (`benchpack refserver`) says what it is in its Server
# header, in this header on every answer, and as its runtime name; the runner
# records it (run-metadata `benchpack.scripted_endpoint`), so it survives a bundle.
SCRIPTED_HEADER = "X-Benchpack-Scripted"
SCRIPTED_RUNTIME = "benchpack-refserver"


def earned_provenance(*, uploaded_by_operator: bool, runner_host: str | None = None,
                      queued_by_operator: bool = False, host_run_by_operator: bool = False,
                      reproduced: bool = False) -> str:
    """The provenance the registry publishes a run with, from facts it checked itself.

    - `reproduced`: the reproduction judge matched this run against another
      host's published run (nothing else earns it);
    - a run executed by a registered runner host: `operator-curated` when an
      operator queued it on a host an operator runs, else `runner-host`;
    - an upload: `operator-curated` when an operator uploaded it, else
      `self-reported`, whatever the bundle claims.
    """
    if reproduced:
        return INDEPENDENTLY_REPRODUCED
    if runner_host:
        return OPERATOR_CURATED if (queued_by_operator and host_run_by_operator) else RUNNER_HOST
    return OPERATOR_CURATED if uploaded_by_operator else SELF_REPORTED


def is_scripted(run_metadata: Any) -> bool:
    """Whether a run was measured against the built-in scripted endpoint (demo data, never a real result).

    Recognised by what the runner recorded (the probe saw the scripted header or
    Server name) or by the runtime name the endpoint announces. A scripted
    server that pretends to be llama-server and strips both is what the
    plausibility checks are for, not this.
    """
    if not isinstance(run_metadata, dict):
        return False
    runner = run_metadata.get("benchpack")
    if isinstance(runner, dict):
        if runner.get("scripted_endpoint") is True:
            return True
        for probe in runner.get("server_probes") or []:
            if isinstance(probe, dict) and probe.get("scripted"):
                return True
    runtime = run_metadata.get("runtime")
    if isinstance(runtime, dict):
        for key in ("name", "version"):
            value = runtime.get(key)
            if isinstance(value, str) and value.strip().lower().startswith(SCRIPTED_RUNTIME):
                return True
    return False
