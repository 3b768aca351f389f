"""Field names in words for pages people read ("hardware_class" -> "hardware class")."""

from django import template

register = template.Library()

WORDS = {"model_id": "model", "model_quantization": "quantization", "runtime_name": "runtime",
         "hardware_class": "hardware class", "pack_id": "pack", "decode_tps": "decode speed",
         "ttft_s": "time to first token", "tpot_s": "time per output token", "wall_s": "wall time",
         "prefill_tps": "prefill speed", "pass_rate": "pass rate", "case_sha256": "case content",
         "max_tokens": "max tokens", "cache_state": "cache state"}


@register.filter
def field_words(name) -> str:
    text = str(name)
    return WORDS.get(text, text.replace("_", " "))
