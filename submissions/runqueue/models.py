"""Runner hosts, their allowlists, and run requests.

Imported by `submissions.models` so Django registers these models under the
`submissions` app.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from benchpack.adapters import ADAPTER_IDS
from submissions.runqueue import states
from submissions.runqueue.querysets import RunnerHostQuerySet, RunRequestQuerySet

HOST_NAME_RE = r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$"
host_name_validator = RegexValidator(
    HOST_NAME_RE, "lower-case letters, digits and '-', at most 40 characters (it becomes the queue runs.<name>)"
)
# Every adapter the runner has (benchpack.adapters): a queued run can speak what coding agents speak.
ADAPTER_CHOICES = [(adapter_id, adapter_id) for adapter_id in ADAPTER_IDS]
STREAM_USAGE_CHOICES = [("include", "include"), ("omit", "omit")]


class RunnerHost(models.Model):
    """A machine that executes runs; its worker listens on the queue `runs.<name>`."""

    name = models.CharField(max_length=40, unique=True, validators=[host_name_validator])
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="runner_hosts")
    description = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True)
    # Set only by an operator (manage.py runner_host approve; hosts.approve_hardware), never from
    # the host's reports: a reproduction is matched on it and a bundle must agree with it
    # (runqueue.evidence). `hardware` is the latest report (a changed GPU shows).
    hardware_class = models.CharField(max_length=255, blank=True, db_index=True)
    hardware = models.JSONField(null=True, blank=True)
    hardware_reported_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker_name = models.CharField(max_length=255, blank=True)
    # The host token (submissions.runqueue.tokens): only its SHA-256 is stored; the
    # token is shown once. Empty: no token (never issued, or revoked).
    token_hash = models.CharField(max_length=64, blank=True, db_index=True)
    token_prefix = models.CharField(max_length=16, blank=True)  # to tell tokens apart in lists and logs
    token_issued_at = models.DateTimeField(null=True, blank=True)
    # The host's own RabbitMQ user (submissions.runqueue.broker_users); empty when it has none.
    broker_user = models.CharField(max_length=64, blank=True)
    is_demo = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RunnerHostQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def queue(self) -> str:
        return f"runs.{self.name}"

    @property
    def is_online(self) -> bool:
        if self.heartbeat_at is None:
            return False
        return (timezone.now() - self.heartbeat_at).total_seconds() <= settings.RUNNER_HOST_OFFLINE_AFTER_S

    @property
    def reported_hardware_class(self) -> str:
        from benchpack.registry.fingerprint import hardware_class

        return hardware_class(self.hardware) or ""

    @property
    def hardware_changed(self) -> bool:
        reported = self.reported_hardware_class
        return bool(self.hardware_class and reported and reported != self.hardware_class)


class HostEndpoint(models.Model):
    """One endpoint a host's worker may call: URL, adapter, the addresses it may
    connect to, the runtime behind it and the models it serves."""

    host = models.ForeignKey(RunnerHost, on_delete=models.CASCADE, related_name="endpoints")
    name = models.CharField(max_length=40, validators=[host_name_validator])
    url = models.CharField(max_length=500)
    adapter = models.CharField(max_length=32, choices=ADAPTER_CHOICES)
    # The only IP addresses a worker may connect to for this endpoint; the URL's
    # host name is resolved once per run and must land on one of them.
    addresses = models.JSONField(default=list)
    runtime_name = models.CharField(max_length=100)
    runtime_version = models.CharField(max_length=100)
    # [{"name": "qwen2.5-7b-instruct", "quantization": "Q4_K_M"}, ...]
    served_models = models.JSONField(default=list)
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["host", "name"]
        constraints = [models.UniqueConstraint(fields=["host", "name"], name="unique_endpoint_name_per_host")]

    def __str__(self) -> str:
        return f"{self.host.name}/{self.name}"

    def model_names(self) -> list[str]:
        return [m["name"] for m in self.served_models]

    def quantization_of(self, model: str) -> str:
        return next((m.get("quantization") or "" for m in self.served_models if m["name"] == model), "")


class HostPack(models.Model):
    """A pack a host may run: a bundled pack (no archive) or an operator-added pack archive."""

    host = models.ForeignKey(RunnerHost, on_delete=models.CASCADE, related_name="packs")
    pack_id = models.CharField(max_length=128)
    version = models.CharField(max_length=64)
    archive = models.BinaryField(null=True, blank=True)
    archive_sha256 = models.CharField(max_length=64, blank=True)
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["host", "pack_id", "version"]
        constraints = [
            models.UniqueConstraint(fields=["host", "pack_id", "version"], name="unique_pack_version_per_host")
        ]

    def __str__(self) -> str:
        return f"{self.pack_id} {self.version}"

    @property
    def source(self) -> str:
        return "archive" if self.archive_sha256 else "bundled"


class RunRequest(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    host = models.ForeignKey(RunnerHost, on_delete=models.PROTECT, related_name="run_requests")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="run_requests")
    pack = models.ForeignKey(HostPack, on_delete=models.PROTECT, related_name="run_requests")
    endpoint = models.ForeignKey(HostEndpoint, on_delete=models.PROTECT, related_name="run_requests")
    model = models.CharField(max_length=255)
    openai_stream_usage = models.CharField(max_length=8, choices=STREAM_USAGE_CHOICES, default="include")
    repetitions = models.PositiveIntegerField(null=True, blank=True)  # None: the pack's own
    time_limit_s = models.PositiveIntegerField()
    state = models.CharField(max_length=16, choices=states.CHOICES, default=states.QUEUED, db_index=True)

    # Execution bookkeeping: the claim is what makes a redelivered message harmless.
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField()
    claim_token = models.UUIDField(null=True, blank=True)
    claimed_by = models.CharField(max_length=255, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)

    # What the page and the API show while it runs.
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    current = models.CharField(max_length=255, blank=True)
    log_tail = models.TextField(blank=True)
    failure_reason = models.TextField(blank=True)
    timings = models.JSONField(default=dict, blank=True)

    submission = models.OneToOneField(
        "submissions.Submission", null=True, blank=True, on_delete=models.PROTECT, related_name="run_request"
    )
    reproduction_of = models.ForeignKey(
        "registry_site.PublishedRun", null=True, blank=True, on_delete=models.PROTECT,
        related_name="reproduction_requests",
    )
    is_demo = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = RunRequestQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.pack} on {self.host} ({self.state})"

    @property
    def is_final(self) -> bool:
        return self.state in states.FINAL

    @property
    def progress_percent(self) -> int:
        return int(100 * self.progress_done / self.progress_total) if self.progress_total else 0


class RunRequestEvent(models.Model):
    request = models.ForeignKey(RunRequest, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    from_state = models.CharField(max_length=16, blank=True)
    to_state = models.CharField(max_length=16)
    reason = models.TextField(blank=True)
    worker = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]


class RunRequestRow(models.Model):
    """A measured row as the worker wrote it. Kept when a run is cancelled or
    fails; never published (only an approved submission is)."""

    request = models.ForeignKey(RunRequest, on_delete=models.CASCADE, related_name="rows")
    attempt = models.PositiveIntegerField()
    index = models.PositiveIntegerField()
    case = models.CharField(max_length=128)
    repetition = models.PositiveIntegerField(null=True)
    ok = models.BooleanField()
    raw = models.JSONField()

    class Meta:
        ordering = ["attempt", "index"]
        constraints = [
            models.UniqueConstraint(fields=["request", "attempt", "index"], name="unique_run_request_row")
        ]

    @property
    def error(self) -> str:
        return self.raw.get("error") or ""

    @property
    def timing(self) -> dict:
        return self.raw.get("timing") or {}


class Reproduction(models.Model):
    """The evidence of one reproduction attempt: a run request's approved result
    compared with the published run it re-measured, case by case."""

    REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE = "reproduced", "not-reproduced", "not-comparable"
    VERDICTS = [(REPRODUCED, "Reproduced"), (NOT_REPRODUCED, "Not reproduced"), (NOT_COMPARABLE, "Not comparable")]

    original = models.ForeignKey("registry_site.PublishedRun", on_delete=models.PROTECT, related_name="reproductions")
    reproduction = models.OneToOneField("registry_site.PublishedRun", on_delete=models.PROTECT,
                                        related_name="reproduces")
    request = models.ForeignKey(RunRequest, null=True, on_delete=models.SET_NULL, related_name="reproductions")
    verdict = models.CharField(max_length=16, choices=VERDICTS)
    # Independent: a different owner and a different host than the original (reproduction.independence).
    independent = models.BooleanField()
    reasons = models.JSONField(default=list)  # why not independent / not comparable
    cases = models.JSONField(default=list)  # benchpack.reporting.reproduction.CaseVerdict dicts
    tolerance = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    @property
    def counts(self) -> bool:
        """Whether this attempt decides the original's badge."""
        return self.independent and self.verdict in (self.REPRODUCED, self.NOT_REPRODUCED)
