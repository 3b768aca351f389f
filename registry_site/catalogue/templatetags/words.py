"""Field names in words for pages people read ("hardware_class" -> "hardware class")."""

from django import template

from benchpack.results import metrics

register = template.Library()

WORDS = {"model_id": "model", "model_quantization": "quantization", "runtime_name": "runtime",
         "hardware_class": "hardware class", "pack_id": "pack", "case_sha256": "case content",
         "max_tokens": "max tokens", "cache_state": "cache state"}


@register.filter
def field_words(name) -> str:
    text = str(name)
    if text in metrics.METRICS:  # a figure: its one label (benchpack.results.metrics)
        return metrics.metric(text).label
    return WORDS.get(text, text.replace("_", " "))
