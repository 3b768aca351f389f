"""The public catalogue: approved results only.

Rows here are written once, by `registry_site.catalogue.publishing.publish`, inside the
transaction that approves a submission; their measurements are never edited
(a correction is a new submission). What may change afterwards is a run's
public status (withdrawn by its submitter, unpublished or flagged by an
operator: `registry_site.catalogue.transitions`) and its reproduction badge,
and with them the denormalized `LeaderboardEntry` and `PublicRunCount` rows, in the same transaction.
"""

from __future__ import annotations

from django.db import models

from registry_site.catalogue.querysets import LeaderboardEntryQuerySet, PublishedCaseQuerySet, PublishedRunQuerySet

PUBLISHED, WITHDRAWN, UNPUBLISHED = "published", "withdrawn", "unpublished"
RUN_STATUSES = [(PUBLISHED, "Published"), (WITHDRAWN, "Withdrawn by the submitter"),
                (UNPUBLISHED, "Unpublished by an operator")]
# The run's own reproduction badge (submissions.runqueue.reproduction decides it).
REPRODUCTION_STATES = [("", "Not reproduced yet"), ("reproduced", "Reproduced"), ("not-reproduced", "Not reproduced")]


class PublishedRun(models.Model):
    submission = models.ForeignKey("submissions.Submission", on_delete=models.PROTECT, related_name="published_runs")
    label = models.CharField(max_length=255)
    pack_id = models.CharField(max_length=128, db_index=True)
    pack_version = models.CharField(max_length=64)
    adapter = models.CharField(max_length=64)
    model = models.CharField(max_length=255, db_index=True)
    runtime = models.CharField(max_length=255, blank=True)
    hardware_class = models.CharField(max_length=255, blank=True, db_index=True)
    # Earned by the server (benchpack.results.provenance.earned_provenance); the
    # API field and filter. The bundle's own word is `claimed_provenance`, shown as a claim.
    provenance = models.CharField(max_length=32, db_index=True)
    claimed_provenance = models.CharField(max_length=32, blank=True, default="")
    # Why it earned it, in words: "uploaded by an operator", "runner host gpu-1, queued by its owner", …
    provenance_basis = models.CharField(max_length=255, blank=True, default="")
    is_demo = models.BooleanField(default=False)
    hardware = models.JSONField(null=True, blank=True)
    run_metadata = models.JSONField(null=True, blank=True)
    row_count = models.PositiveIntegerField()
    ok_count = models.PositiveIntegerField()
    published_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # The system key (benchpack.registry.fingerprint.system_key) and its inputs in words.
    system_key = models.CharField(max_length=64, blank=True, db_index=True)
    system_fields = models.JSONField(null=True, blank=True)
    pack_workload_key = models.CharField(max_length=64, blank=True)
    model_family = models.CharField(max_length=128, blank=True)
    model_quantization = models.CharField(max_length=64, blank=True)
    runtime_name = models.CharField(max_length=128, blank=True)
    runtime_version = models.CharField(max_length=128, blank=True)
    accelerator = models.CharField(max_length=255, blank=True)
    # Public status; only `published` runs are public (PublishedRunQuerySet.public).
    status = models.CharField(max_length=16, choices=RUN_STATUSES, default=PUBLISHED, db_index=True)
    status_reason = models.TextField(blank=True)  # kept for the audit trail, shown to operators only
    status_changed_at = models.DateTimeField(null=True, blank=True)
    # A flagged run stays public, with this note beside it everywhere it appears.
    flag_note = models.TextField(blank=True)
    reproduction_state = models.CharField(max_length=16, choices=REPRODUCTION_STATES, blank=True, default="")
    # benchpack.results.plausibility: the run's verdict (plausible | implausible | unchecked) and
    # summary() ({"verdict": {status, reason, factor, figure}, "rows": {status: count}}); an implausible
    # run is published only after an operator's written override (a submission event).
    plausibility_status = models.CharField(max_length=12, blank=True, default="")
    plausibility = models.JSONField(null=True, blank=True)
    # "imported from TOOL VERSION" when the bundle's manifest `source` says it was imported (`benchpack import`,
    # docs/interop.md): measured by another tool, not by Benchpack. "" for a run Benchpack measured.
    imported_from = models.CharField(max_length=128, blank=True, default="", db_index=True)

    objects = PublishedRunQuerySet.as_manager()

    @property
    def plausibility_verdict(self) -> dict:
        return (self.plausibility or {}).get("verdict") or {"status": "unchecked", "reason": "not judged"}

    class Meta:
        ordering = ["-published_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "label"], name="unique_published_run_per_submission")
        ]
        # The public run list (/api/v1/runs/, issue 34 item 4): partial indexes over published runs that hold
        # every column its page and its COUNT read (the filter, the id it is ordered by, the submission the
        # public rule joins), so both are index-only scans instead of a heap read of ~1.7 kB per run.
        indexes = [
            models.Index(fields=["pack_workload_key", "system_key"], name="run_pack_workload_system"),
            *(models.Index(fields=[*columns, "id", "submission"], condition=models.Q(status="published"), name=name)
              for name, columns in (("run_public", ()), ("run_public_pack", ("pack_id",)),
                                    ("run_public_model", ("model",)),
                                    ("run_public_hardware", ("hardware_class", "runtime")))),
            # The same filters in publication order (`?order=-published`, `?since=`/`?until=`: h45d): the page is
            # read off the index in its order (published_at, then id: the order's tie-break), and a date range's
            # COUNT is an index-only range scan, where the plain published_at index made PostgreSQL walk every
            # public run newest first, or sort all of a filter's runs.
            *(models.Index(fields=[*columns, "published_at", "id", "submission"], condition=models.Q(status="published"),
                           name=name)
              for name, columns in (("run_public_published", ()), ("run_public_pack_published", ("pack_id",)),
                                    ("run_public_model_published", ("model",)),
                                    ("run_public_hardware_published", ("hardware_class", "runtime")))),
        ]

    @property
    def is_flagged(self) -> bool:
        return bool(self.flag_note)

    def __str__(self) -> str:
        return f"{self.pack_id} {self.pack_version} · {self.model} ({self.label})"


class PublishedCase(models.Model):
    """Per-case medians of one published run, with its comparability fingerprint
    and its workload and system keys (benchpack.registry.fingerprint)."""

    run = models.ForeignKey(PublishedRun, on_delete=models.CASCADE, related_name="cases")
    case = models.CharField(max_length=128)
    fingerprint = models.CharField(max_length=64, db_index=True)
    fingerprint_fields = models.JSONField()
    workload_key = models.CharField(max_length=64, blank=True)
    workload_fields = models.JSONField(null=True, blank=True)
    system_key = models.CharField(max_length=64, blank=True)
    cache_state = models.CharField(max_length=8, blank=True)  # D-013: cold | cached | unknown
    rows = models.PositiveIntegerField()
    ok_rows = models.PositiveIntegerField()
    passed_rows = models.PositiveIntegerField(null=True)
    wall_s = models.FloatField(null=True)
    ttft_s = models.FloatField(null=True)
    tpot_s = models.FloatField(null=True)
    # The decode figure (benchpack.results.metrics): median over ok rows of 1/tpot_s.
    decode_rate = models.FloatField(null=True)
    # Legacy output ÷ (wall − TTFT), kept for the seed format; shown labelled by its formula, never ranked.
    decode_tps = models.FloatField(null=True)
    total_tps = models.FloatField(null=True)
    # Only when every ok row was evaluated cold (D-013): a cached prompt's "rate" is not one.
    prefill_tps = models.FloatField(null=True)
    prompt_tokens = models.FloatField(null=True)
    cached_prompt_tokens = models.FloatField(null=True)
    scored_rows = models.PositiveIntegerField(null=True)  # ok rows with a pass/fail verdict
    # Ok rows whose repo-task verdict is `suspicious` (the answer introspects its caller or environment,
    # docs/audits.md): scored as failed in passed_rows, and counted apart here so the run page can say so.
    suspicious_rows = models.PositiveIntegerField(default=0)
    # An external agent's sessions (the rows' `agent_session`, docs/agents.md): medians over the ok rows
    # that carry one, so the pass rate above has the speed the agent saw beside it. Null: no agent session.
    time_to_solution_s = models.FloatField(null=True)
    agent_decode_rate = models.FloatField(null=True)
    agent_ttft_s = models.FloatField(null=True)

    objects = PublishedCaseQuerySet.as_manager()

    class Meta:
        ordering = ["run", "pk"]
        indexes = [models.Index(fields=["workload_key", "system_key"], name="case_workload_system")]


class PublishedRow(models.Model):
    run = models.ForeignKey(PublishedRun, on_delete=models.CASCADE, related_name="rows")
    case = models.CharField(max_length=128)
    repetition = models.PositiveIntegerField(null=True)
    ok = models.BooleanField()
    raw = models.JSONField()
    # This row's benchpack.results.plausibility.Verdict as a dict: {status, reason, factor, figure}.
    plausibility = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["run", "pk"]


# Names from benchpack.results.metrics; decode_tps (legacy) is kept as a column but never ranked.
# The agent figures (metrics.AGENT_METRICS) come from the agent sessions of repo-task rows.
METRICS = ("decode_rate", "decode_tps", "ttft_s", "prefill_tps", "tpot_s", "wall_s", "pass_rate",
           "agent_decode_rate", "agent_ttft_s", "time_to_solution_s")


def _metric_fields():
    fields = {}
    for metric in METRICS:
        fields[metric] = models.FloatField(null=True)  # median over the runs behind the row
        fields[f"{metric}_min"] = models.FloatField(null=True)
        fields[f"{metric}_max"] = models.FloatField(null=True)
    return fields


class LeaderboardEntry(models.Model):
    """One row of a leaderboard: one system on one workload, over its public runs.

    Denormalized so a ranking is one indexed query over a few hundred rows
    instead of an aggregate over a million case rows. Written by
    `registry_site.catalogue.leaderboard.refresh` only, inside the transaction
    that changed the runs behind it (approval, withdrawal, unpublish, flag,
    reproduction verdict). `case == ""` is the pack-level row of a run's
    whole pack workload (pass rate against speed).
    """

    workload_key = models.CharField(max_length=64)
    system_key = models.CharField(max_length=64)
    pack_id = models.CharField(max_length=128)
    pack_version = models.CharField(max_length=64)
    case = models.CharField(max_length=128, blank=True)
    workload_fields = models.JSONField(null=True, blank=True)
    workload_complete = models.BooleanField(default=False)
    system_fields = models.JSONField(null=True, blank=True)
    system_complete = models.BooleanField(default=False)
    adapter = models.CharField(max_length=64, blank=True)
    cache_state = models.CharField(max_length=8, blank=True)
    model = models.CharField(max_length=255)
    model_family = models.CharField(max_length=128, blank=True)
    model_quantization = models.CharField(max_length=64, blank=True)
    runtime_name = models.CharField(max_length=128, blank=True)
    runtime_version = models.CharField(max_length=128, blank=True)
    hardware_class = models.CharField(max_length=255, blank=True)
    accelerator = models.CharField(max_length=255, blank=True)
    # The strongest provenance among the runs (independently-reproduced > operator-curated > self-reported).
    provenance = models.CharField(max_length=32)
    reproduced = models.BooleanField(default=False)  # any run behind the row has a counted, matching reproduction
    flagged = models.BooleanField(default=False)
    flag_note = models.TextField(blank=True)
    is_demo = models.BooleanField(default=False)
    run_count = models.PositiveIntegerField()
    rows = models.PositiveIntegerField()  # measured rows
    answered = models.PositiveIntegerField()  # rows the endpoint answered (ok)
    scored = models.PositiveIntegerField(null=True)  # answered rows with a pass/fail verdict (null: unscored workload)
    correct = models.PositiveIntegerField(null=True)  # of those, passed
    # Of `scored`, answers whose repo-task verdict is `suspicious` (they introspect their caller or environment,
    # docs/audits.md): not in `correct`, like a wrong answer, and counted apart here so boards can say so.
    suspicious_answers = models.PositiveIntegerField(default=0)
    # The runs' plausibility (benchpack.results.plausibility) joined: implausible if any run behind the row is,
    # plausible if every run is, else unchecked; boards rank checked rows ahead (issue 30 item 5).
    plausibility = models.CharField(max_length=12, default="unchecked")
    plausibility_runs = models.JSONField(null=True, blank=True)  # {status: runs behind the row}
    # The runs' "imported from TOOL VERSION" (one workload = one tool and version), "" when Benchpack measured them.
    imported_from = models.CharField(max_length=128, blank=True, default="")
    first_published_at = models.DateTimeField()
    last_published_at = models.DateTimeField()
    representative_run = models.ForeignKey(PublishedRun, on_delete=models.PROTECT, related_name="+")
    locals().update(_metric_fields())

    objects = LeaderboardEntryQuerySet.as_manager()

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(fields=["workload_key", "system_key", "case"], name="unique_leaderboard_entry")
        ]
        indexes = [
            models.Index(fields=["pack_id", "case", "workload_key"], name="entry_pack_case_workload"),
            models.Index(fields=["workload_key", "decode_tps"], name="entry_workload_decode"),
            models.Index(fields=["workload_key", "decode_rate"], name="entry_workload_decode_rate"),
            models.Index(fields=["model"], name="entry_model"),
            models.Index(fields=["runtime_name", "runtime_version"], name="entry_runtime"),
            models.Index(fields=["hardware_class"], name="entry_hardware"),
        ]

    UNKNOWN_WORDS = {"model_id": "model", "model_quantization": "quantization", "model_sha256": "weights hash",
                     "runtime_name": "runtime", "runtime_version": "runtime version",
                     "hardware_class": "hardware class"}

    @property
    def unknown_text(self) -> str:
        """What the "incomplete" badge means, on the page (issue 32 item 5): "quantization unknown"."""
        unknown = (self.system_fields or {}).get("unknown") or []
        words = [self.UNKNOWN_WORDS.get(name, name.replace("_", " ")) for name in unknown]
        return f"{', '.join(words)} unknown" if words else "some system inputs unknown"

    @property
    def pass_interval(self) -> tuple[float, float] | None:
        """95 % Wilson interval of the pooled pass rate (benchpack.results.metrics.pass_interval)."""
        from benchpack.results.metrics import pass_interval

        return pass_interval(self.correct, self.scored)

    @property
    def pass_text(self) -> str:
        from benchpack.results.metrics import pass_text

        return pass_text(self.correct, self.scored, self.suspicious_answers)

    @property
    def plausibility_text(self) -> str:
        """"plausible (3 of 3 runs)" / "unchecked (1 plausible, 1 unchecked of 2 runs)"."""
        counts = self.plausibility_runs or {}
        runs = sum(counts.values())
        if not runs:
            return self.plausibility
        if set(counts) == {self.plausibility}:
            return f"{self.plausibility} ({runs} of {runs} run{'s' if runs != 1 else ''})"
        counted = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        return f"{self.plausibility} ({counted} of {runs} runs)"

    def __str__(self) -> str:
        return f"{self.pack_id} {self.case or '(pack)'} · {self.model} · {self.runtime_name} · {self.hardware_class}"


class PublicRunCount(models.Model):
    """How many public runs share one value of each of the run list's equality filters (issue 34 item 4).

    One row per group of public runs with the same (pack_id, pack_version, model, runtime, hardware_class,
    provenance, imported), split further by the runs' (pack workload, system) pair; `/api/v1/runs/` answers
    its `count` as the SUM of the rows matching its filters instead of counting runs (linear: 2–6 s at 10M
    case rows on a cold cache). The pair is in the key so that a change recounts the runs of its pairs, found
    by the `run_pack_workload_system` index, rather than ANDing single-column indexes that grow with the
    catalogue. Written by `registry_site.catalogue.run_counts` only, in the transaction that changed the runs
    behind it (the leaderboard refresh's callers), so it is exact whenever the runs are: docs/leaderboards.md,
    "The run list's count, precomputed".

    `group_key` (a digest of the key columns) carries the uniqueness: a unique index over the columns
    themselves (over 1,000 characters) can exceed PostgreSQL's 2,704-byte btree row limit with non-ASCII names.
    """

    group_key = models.CharField(max_length=64, unique=True)
    pack_workload_key = models.CharField(max_length=64, blank=True)
    system_key = models.CharField(max_length=64, blank=True)
    pack_id = models.CharField(max_length=128)
    pack_version = models.CharField(max_length=64)
    model = models.CharField(max_length=255)
    runtime = models.CharField(max_length=255, blank=True)
    hardware_class = models.CharField(max_length=255, blank=True)
    provenance = models.CharField(max_length=32)
    imported = models.BooleanField()  # the runs' imported_from is set (`benchpack import`)
    runs = models.PositiveIntegerField()

    class Meta:
        ordering = ["pk"]
        # A change deletes its pairs' rows before counting them again (run_counts.recount).
        indexes = [models.Index(fields=["pack_workload_key", "system_key"], name="run_count_pair")]

    def __str__(self) -> str:
        return f"{self.pack_id} {self.pack_version} · {self.model} · {self.runtime} · {self.hardware_class}: {self.runs}"


class CatalogueGeneration(models.Model):
    """One row whose `value` grows with every change to what the public catalogue shows.

    Bumped inside the transaction that makes the change (publishing, a
    withdrawal, unpublish, flag, reproduction verdict: every path that rewrites
    leaderboard rows), so a reader sees the new number exactly when it can see
    the new data. `registry_site.catalogue.cache` keys cached public responses
    by it: a response can never outlive the data it was rendered from.
    """

    value = models.BigIntegerField(default=0)


class DeferredDefinition(models.Model):
    """An index or foreign key that `seed_catalogue --defer-indexes` has dropped and not yet built again.

    Written in the transaction that drops it and deleted in the transaction that builds it back
    (`registry_site.catalogue.deferred_indexes`), so the table holds exactly what is missing, whatever
    happened to the command in between: a killed import (SIGKILL, the machine going down) leaves its rows
    here, and `seed_catalogue --restore-indexes` (or the next `seed_catalogue`) builds them back.
    `manage.py check --database default` warns while any row is here.
    """

    INDEX, FOREIGN_KEY = "index", "foreign key"

    name = models.CharField(max_length=200, unique=True)  # the index's or constraint's name, as PostgreSQL has it
    kind = models.CharField(max_length=20, choices=[(INDEX, INDEX), (FOREIGN_KEY, FOREIGN_KEY)])
    table_name = models.CharField(max_length=200)
    definition = models.TextField()  # the statement that builds it back, verbatim
    dropped_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} {self.name} on {self.table_name}"
