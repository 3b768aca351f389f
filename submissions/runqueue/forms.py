"""The run request form: every choice comes from the host's allowlists (no free-text URL)."""

from __future__ import annotations

from django import forms
from django.conf import settings

from submissions.runqueue.models import RunnerHost


def target_value(endpoint, model: str) -> str:
    return f"{endpoint.name}|{model}"


class RunRequestForm(forms.Form):
    target = forms.ChoiceField(label="Endpoint and model")
    pack = forms.ChoiceField()
    openai_stream_usage = forms.ChoiceField(
        label="Streaming usage (openai-chat)", choices=[("include", "include"), ("omit", "omit")], initial="include",
        help_text="D-014: omit for servers that reject stream_options.",
    )
    repetitions = forms.IntegerField(required=False, min_value=1, max_value=settings.RUN_REQUEST_MAX_REPETITIONS,
                                     help_text="Blank: the pack's own.")
    time_limit_minutes = forms.IntegerField(
        min_value=1, max_value=max(1, settings.RUN_REQUEST_MAX_S // 60),
        initial=settings.RUN_REQUEST_DEFAULT_TIME_LIMIT_S // 60,
        help_text="The run stops (and fails) when it is reached.",
    )

    def __init__(self, host: RunnerHost, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.host = host
        self.fields["target"].choices = [
            (target_value(endpoint, model["name"]),
             f"{endpoint.name} · {model['name']}" + (f" ({model['quantization']})" if model.get("quantization") else "")
             + f" — {endpoint.runtime_name} {endpoint.runtime_version}, {endpoint.adapter}")
            for endpoint in host.endpoints.filter(enabled=True)
            for model in endpoint.served_models
        ]
        self.fields["pack"].choices = [(f"{p.pack_id}|{p.version}", f"{p.pack_id} {p.version}")
                                       for p in host.packs.filter(enabled=True)]

    def choice(self) -> dict:
        """The form's values as create_run_request keywords."""
        endpoint, _, model = self.cleaned_data["target"].partition("|")
        pack, _, version = self.cleaned_data["pack"].partition("|")
        return {"host": self.host.name, "endpoint": endpoint, "model": model, "pack": pack, "pack_version": version,
                "openai_stream_usage": self.cleaned_data["openai_stream_usage"],
                "repetitions": self.cleaned_data["repetitions"],
                "time_limit_s": self.cleaned_data["time_limit_minutes"] * 60}
