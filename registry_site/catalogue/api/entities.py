"""Models, runtimes, hardware classes and systems: what has public results, and each one's best per pack.

The index and the best-per-pack rows come from
`registry_site.catalogue.leaderboard` (`entities`, `best_per_pack`,
`entity_runs`), as on the model/runtime/hardware pages. A system is one
system key (model + quantization, runtime + version, hardware class); its
list reads the whole-pack leaderboard rows.
"""

from __future__ import annotations

from django.db.models import Case, Count, Max, Sum, When
from rest_framework import serializers
from rest_framework.exceptions import NotFound

from registry_site.catalogue.api.base import CatalogueDetailView, CatalogueListView
from registry_site.catalogue.api.leaderboards import EntrySerializer
from registry_site.catalogue import leaderboard as lb
from registry_site.catalogue.models import LeaderboardEntry


class ModelIndexSerializer(serializers.Serializer):
    model = serializers.CharField()
    model_family = serializers.CharField()
    model_quantization = serializers.CharField()
    rows = serializers.IntegerField(help_text="whole-pack leaderboard rows")
    runs = serializers.IntegerField()
    demo = serializers.BooleanField()


class RuntimeIndexSerializer(serializers.Serializer):
    runtime_name = serializers.CharField()
    runtime_version = serializers.CharField()
    rows = serializers.IntegerField()
    runs = serializers.IntegerField()
    demo = serializers.BooleanField()


class HardwareIndexSerializer(serializers.Serializer):
    hardware_class = serializers.CharField()
    accelerator = serializers.CharField()
    rows = serializers.IntegerField()
    runs = serializers.IntegerField()
    demo = serializers.BooleanField()


class EntitySerializer(serializers.Serializer):
    kind = serializers.CharField()
    name = serializers.CharField()
    run_count = serializers.IntegerField(help_text="public runs")
    best_per_pack = EntrySerializer(many=True, help_text="the best whole-pack row per pack by decode tok/s")


class _EntityIndex(CatalogueListView):
    """Every one with public results, with its whole-pack leaderboard rows and runs."""

    kind = ""
    queryset = LeaderboardEntry.objects.none()  # for the schema generator only; get_queryset answers

    def get_queryset(self):
        return lb.entities(self.kind)


class ModelIndex(_EntityIndex):
    kind, serializer_class = "model", ModelIndexSerializer


class RuntimeIndex(_EntityIndex):
    kind, serializer_class = "runtime", RuntimeIndexSerializer


class HardwareIndex(_EntityIndex):
    kind, serializer_class = "hardware", HardwareIndexSerializer


class _EntityDetail(CatalogueDetailView):
    """How many public runs it has, and its best whole-pack leaderboard row per pack (by decode tok/s)."""

    kind = ""
    serializer_class = EntitySerializer

    def get_object(self):
        name = self.kwargs["name"]
        best = lb.best_per_pack(self.kind, name)
        if not best:
            raise NotFound(f"no public results for {self.kind} {name[:200]!r}")
        return {"kind": self.kind, "name": name, "run_count": lb.entity_runs(self.kind, name).count(),
                "best_per_pack": best}



class ModelDetail(_EntityDetail):
    kind = "model"


class RuntimeDetail(_EntityDetail):
    kind = "runtime"


class HardwareDetail(_EntityDetail):
    kind = "hardware"


# --- systems --------------------------------------------------------------------------

SYSTEM_COLUMNS = ("system_key", "model", "model_quantization", "runtime_name", "runtime_version", "hardware_class",
                  "accelerator", "system_complete")


class SystemSerializer(serializers.Serializer):
    system_key = serializers.CharField()
    model = serializers.CharField()
    model_quantization = serializers.CharField()
    runtime_name = serializers.CharField()
    runtime_version = serializers.CharField()
    hardware_class = serializers.CharField()
    accelerator = serializers.CharField()
    system_complete = serializers.BooleanField(help_text="false: some system-key input is unknown")
    packs = serializers.IntegerField(help_text="whole-pack boards the system is on")
    runs = serializers.IntegerField()
    demo = serializers.BooleanField()
    url = serializers.SerializerMethodField()

    def get_url(self, obj) -> str:
        return f"/api/v1/systems/{obj['system_key']}/"


class SystemDetailSerializer(SystemSerializer):
    inputs = serializers.JSONField(source="system_fields", help_text="the system key's inputs")
    entries = EntrySerializer(many=True, help_text="the system's whole-pack leaderboard rows")


def _systems():
    return (LeaderboardEntry.objects.public().filter(case="").values(*SYSTEM_COLUMNS)
            .annotate(packs=Count("pack_id", distinct=True), runs=Sum("run_count"),
                      demo=Max(Case(When(is_demo=True, then=1), default=0)))  # PostgreSQL has no MAX(boolean)
            .order_by("model", "runtime_name", "runtime_version", "hardware_class", "system_key"))


class SystemList(CatalogueListView):
    """Every system (model + quantization, runtime + version, hardware class) with public whole-pack results."""

    serializer_class = SystemSerializer
    queryset = LeaderboardEntry.objects.none()  # for the schema generator only

    def get_queryset(self):
        return _systems()


class SystemDetail(CatalogueDetailView):
    """One system: the inputs of its key and its whole-pack leaderboard rows."""

    serializer_class = SystemDetailSerializer

    def get_object(self):
        key = self.kwargs["system_key"]
        summary = _systems().filter(system_key=key).first() if len(key) <= 64 else None
        if summary is None:
            raise NotFound(f"no public system {key[:80]!r}")
        entries = list(LeaderboardEntry.objects.public().filter(system_key=key, case="").order_by("pack_id", "pk"))
        return {**summary, "system_fields": entries[0].system_fields if entries else None, "entries": entries}
