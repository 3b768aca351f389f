"""How a request meets the server's prompt cache: the policy, and what it sends.

Servers keep the last prompts they evaluated (llama-server per slot, vLLM by
prefix blocks, Ollama per loaded model), so a prompt sent twice is mostly
served from cache and its "prefill" takes no time. A pack that measures
prefill asks for cold prompts (`defaults.prompt_cache = "cold"`), and then
every request, warmups included:

* starts with a unique nonce line, `[nonce 01234567890123456789]`, made of
  the decimal digits of a fresh random 64-bit nonce: no earlier prompt
  shares its first tokens, so no prefix cache on any server can serve it.
  Digits keep the line's token count the same from request to request on
  current tokenizers (they split digits into fixed-size groups), so the
  prompt-token count stays comparable between repetitions and runs;
* sends `"cache_prompt": false` when the server honours that switch
  (llama-server), so not even the chat template's opening is reused.

`server-default` (the default) leaves the prompt and request as the pack
wrote them. Every row records what was done in its `prompt_cache` object:
`{"policy", "cache_prompt_param", "nonce"}` (docs/measurement.md).
"""

from __future__ import annotations

import os

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

COLD = "cold"
SERVER_DEFAULT = "server-default"
POLICIES = (COLD, SERVER_DEFAULT)
NONCE_BITS = 64


class PreparedPrompt(msgspec.Struct, frozen=True):
    prompt: str
    extra_body: dict | None
    record: dict  # the row's `prompt_cache` object


def nonce_line(nonce_hex: str) -> str:
    """The line put before a cold prompt: `[nonce <20 decimal digits>]`."""
    return f"[nonce {int(nonce_hex, 16):020d}]\n"


def prepare(prompt: str, policy: str, *, cache_prompt_param: bool) -> PreparedPrompt:
    """The prompt and extra body fields for one request under `policy`.

    `cache_prompt_param` says whether the server honours a per-request
    `cache_prompt` switch (it is sent only then: other servers may refuse an
    unknown field).
    """
    if policy != COLD:
        return PreparedPrompt(prompt, None, {"policy": SERVER_DEFAULT, "cache_prompt_param": None, "nonce": None})
    # secrets.token_hex's own text (its body is this); the secrets module itself (with hmac, base64 and
    # OpenSSL's hashlib) cost `benchpack run` ~3 ms of imports before its first request.
    nonce = os.urandom(NONCE_BITS // 8).hex()
    extra = {"cache_prompt": False} if cache_prompt_param else None
    record = {"policy": COLD, "cache_prompt_param": False if cache_prompt_param else None, "nonce": nonce}
    return PreparedPrompt(nonce_line(nonce) + prompt, extra, record)
