"""Schemathesis hooks for tests/service/api/test_schemathesis.py (loaded through SCHEMATHESIS_HOOKS).

The one refusal a schema cannot state: a filter value that is well formed but names nothing in the
public catalogue (`?model=no-such-model`) is a 400 naming the parameter (docs/api.md: a typo is never
mistaken for "no results"). schemathesis.toml lets positive_data_acceptance expect a 400, and this check
takes the strictness back: a schema-valid request may be refused only for that reason.
"""

from __future__ import annotations

import re

import schemathesis

# The messages of the catalogue-lookup refusals (registry_site/catalogue/api/filters.py, leaderboards.py,
# timelines.py, compare, entities): each names a value that is well formed and unknown.
NAMES_NOTHING = re.compile(
    r"^no public (result|leaderboard row|run|case|series|timeline|system|model|runtime|hardware class)\b"
    r"|^no (run|public run)s? with id|is not public|^no series\b|^no leaderboard\b|^no workload\b"
    # the answer page's kind of work: a pack id (or "coding") with no public results
    r"|^.* has no public results; one of: "
    # compare's runs: the pattern states 2–4 ids, not that they differ
    r"|^give 2 to 4 different run ids"
    # run requests name a host, endpoint, model and pack from the host's allowlists (docs/runner-hosts.md)
    r"|^no enabled runner host named|is not on the (endpoint|pack) allowlist of|^model .* is not served by"
    r"|applies to openai-chat endpoints only"
    # an upload's bytes: a schema says "binary", not "a bundle archive" (its name and content are checked)
    r"|: the archive must be a \.tar\.gz or \.zip file|: the file is empty$"
    # the runner-host API: a free object (hardware.json, a row's raw) may not carry a NUL anywhere,
    # which a schema cannot state for an object of any shape (PostgreSQL cannot store one)
    r"|: NUL characters are refused$"
    # a finish's `timings` is a multipart text part holding a JSON object: its schema says text
    r"|^timings: must be a JSON object \(as text\)$|^bundle: The submitted file is empty\.$")


@schemathesis.check
def refusals_only_for_unknown_values(ctx, response, case):
    """A schema-valid request answered 400 must be refused only because a value names nothing."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    body = response.json()
    reasons = [reason for reasons in (body.get("fields") or {}).values() for reason in reasons] or [body["error"]]
    others = [reason for reason in reasons if not NAMES_NOTHING.search(reason)]
    if others:
        raise AssertionError(f"a schema-valid request was refused for a reason the schema could state: {others}")
    return None
