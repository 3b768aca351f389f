"""A conservative text scan for credentials that must never reach a public bundle.

It reports *where* (line, column) and *what kind* of secret it saw, never the
matched text: the findings end up in CLI output, service logs and emails, so
echoing the secret would leak it a second time.

Every pattern is anchored on something a real credential carries (a vendor
prefix, `Bearer `, `user:pass@`, a secret-named key with a non-empty string
value), so ordinary benchmark results scan clean: endpoint URLs such as
`http://127.0.0.1:8081/v1/chat/completions`, token *counts*
(`"prompt_tokens": 12`) and telemetry labels (`"token_budget_field":
"max_tokens"`) are not secrets.
"""

from __future__ import annotations

import bisect
import collections
import json
import math
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretHit:
    kind: str  # stable id, e.g. "bearer-token"; used in finding codes
    line: int  # 1-based
    column: int  # 1-based, in characters

    @property
    def description(self) -> str:
        return KIND_DESCRIPTIONS[self.kind]


KIND_DESCRIPTIONS = {
    "private-key": "private key block",
    "aws-access-key": "AWS access key id",
    "github-token": "GitHub token",
    "openai-key": "OpenAI-style secret key",
    "anthropic-key": "Anthropic API key",
    "huggingface-token": "Hugging Face token",
    "gitlab-token": "GitLab token",
    "slack-token": "Slack token",
    "slack-webhook": "Slack webhook URL",
    "discord-webhook": "Discord webhook URL",
    "stripe-key": "Stripe secret key",
    "google-api-key": "Google API key",
    "google-oauth": "Google OAuth client secret or access token",
    "jwt": "JSON Web Token",
    "sendgrid-key": "SendGrid API key",
    "twilio-key": "Twilio API key",
    "npm-token": "npm access token",
    "pypi-token": "PyPI upload token",
    "azure-storage-key": "Azure storage account key",
    "square-token": "Square access token or OAuth secret",
    "shopify-token": "Shopify access token",
    "digitalocean-token": "DigitalOcean token",
    "databricks-token": "Databricks token",
    "ai-provider-key": "AI provider API key (Groq, Replicate, Perplexity, xAI)",
    "vault-token": "HashiCorp Vault token",
    "saas-token": "service API token (Postman, Sentry, Grafana, New Relic, Linear, Notion, Doppler, Atlassian)",
    "mailchimp-key": "Mailchimp API key",
    "telegram-bot-token": "Telegram bot token",
    "discord-bot-token": "Discord bot token",
    "bearer-token": "bearer token",
    "basic-auth": "HTTP basic credentials",
    "credentialed-url": "URL with embedded user:password",
    "tokenized-query": "URL query string carrying a credential",
    "secret-json-field": "secret-named JSON field with a value",
    "keyword-secret": "high-entropy value assigned to a secret-named key",
}

# Key names whose string value is treated as a credential. Names are compared
# after lowercasing and mapping '-' to '_'; a key also matches when it *ends*
# in one of the suffixes (client_secret, x_api_key, github_token, ...).
_SECRET_KEY_NAMES = frozenset(
    {
        "api_key", "apikey", "secret", "password", "passwd", "pwd", "token",
        "authorization", "auth", "credential", "credentials", "private_key",
        "access_key", "secret_key", "cookie", "set_cookie", "session_key",
        "bearer", "passphrase",
    }
)
_SECRET_KEY_SUFFIXES = (
    "_api_key", "_apikey", "_secret", "_password", "_passwd", "_token",
    "_private_key", "_access_key", "_secret_key", "_credentials", "_passphrase",
    "apikey", "secretkey", "accesstoken", "authtoken", "password",
)
# Values that say "there is no secret here".
_PLACEHOLDER_VALUES = frozenset(
    {"", "null", "none", "redacted", "<redacted>", "[redacted]", "***", "xxx", "changeme", "<token>"}
)
_QUERY_SECRET_KEYS = (
    "token", "access_token", "refresh_token", "id_token", "auth_token", "api_key", "apikey", "api-key",
    "key", "sig", "signature", "password", "passwd", "secret", "client_secret", "x-amz-signature",
    "x-amz-credential", "x-amz-security-token", "x-goog-signature", "code",
)
# Last words of secret-named JSON keys ("client_secret" ends in "secret").
_SECRET_KEY_LAST_WORDS = (
    "key", "apikey", "secret", "password", "passwd", "pwd", "token", "auth", "authorization",
    "credential", "credentials", "cookie", "bearer", "passphrase",
)

# Speed matters (the validator must keep up with ~100 MB/s of artifacts), and
# Python's regex engine is only fast when a pattern starts with a literal or a
# character set, so every pattern below starts with its anchor and the
# word-boundary tests that would need a look-behind are done in `_accept`.
# Case-insensitive kinds run on a lower-cased copy with the same offsets.
@dataclass(frozen=True)
class _Detector:
    kind: str
    pattern: str
    folded: bool = False  # match against lower-cased text
    boundary_before: str = ""  # characters that must NOT precede the match


_WORD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_TOKEN = "A-Za-z0-9_-"
_DETECTORS = (
    _Detector("private-key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-[0-9]|AGE-SECRET-KEY-1[0-9A-Z]{50}"),
    _Detector("aws-access-key", r"A(?:KIA|SIA|GPA|IDA|ROA|NPA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])", boundary_before=_WORD),
    _Detector("github-token", r"g(?:h[pousr]_[A-Za-z0-9]{30,}|ithub_pat_[A-Za-z0-9_]{22,})", boundary_before=_WORD),
    # `sk-ant-…` is Anthropic's (below), so one key gives one finding.
    _Detector("openai-key", r"sk-(?!ant-)(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}", boundary_before=_WORD + "-"),
    _Detector("anthropic-key", r"sk-ant-[a-z0-9]+-[A-Za-z0-9_-]{20,}", boundary_before=_WORD + "-"),
    _Detector("huggingface-token", r"(?:hf_|api_org_)[A-Za-z0-9]{30,}(?![A-Za-z0-9])", boundary_before=_WORD),
    _Detector("gitlab-token", r"(?:gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas|ffct|feed)-|GR1348941)[A-Za-z0-9_-]{20,}", boundary_before=_WORD),
    _Detector("slack-token", r"xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}", boundary_before=_WORD),
    _Detector("slack-webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Za-z0-9_]+/[A-Za-z0-9_]+/[A-Za-z0-9_]{8,}"),
    _Detector("discord-webhook", r"discord(?:app)?\.com/api/webhooks/[0-9]{5,}/[A-Za-z0-9_-]{20,}"),
    _Detector("stripe-key", r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{20,}", boundary_before=_WORD),
    _Detector("google-api-key", r"AIza[0-9A-Za-z_-]{35}", boundary_before=_WORD + "-"),
    _Detector("google-oauth", r"GOCSPX-[A-Za-z0-9_-]{24,}|ya29\.[0-9A-Za-z_-]{20,}", boundary_before=_WORD),
    # header.payload.signature, both JSON objects: base64url of `{"` is `eyJ`.
    _Detector("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", boundary_before=_WORD),
    _Detector("sendgrid-key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", boundary_before=_WORD),
    _Detector("twilio-key", r"(?:AC|SK)[0-9a-f]{32}(?![A-Za-z0-9])", boundary_before=_WORD),
    _Detector("npm-token", r"npm_[A-Za-z0-9]{36}", boundary_before=_WORD),
    _Detector("pypi-token", r"pypi-AgE[A-Za-z0-9_-]{50,}", boundary_before=_WORD),
    _Detector("azure-storage-key", r"AccountKey=[A-Za-z0-9+/]{80,}={0,2}"),
    _Detector("square-token", r"sq0(?:atp|csp)-[0-9A-Za-z_-]{22,}", boundary_before=_WORD),
    _Detector("shopify-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", boundary_before=_WORD),
    _Detector("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}", boundary_before=_WORD),
    _Detector("databricks-token", r"dapi[a-f0-9]{32}(?![A-Za-z0-9])", boundary_before=_WORD),
    _Detector("ai-provider-key", r"(?:gsk_[A-Za-z0-9]{48,}|r8_[A-Za-z0-9]{37,}|pplx-[A-Za-z0-9]{40,}|xai-[A-Za-z0-9]{60,})", boundary_before=_WORD),
    _Detector("vault-token", r"hv[sbr]\.[A-Za-z0-9_-]{24,}", boundary_before=_WORD),
    _Detector("saas-token", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}|sntry[su]_[A-Za-z0-9+/=_-]{40,}|gl(?:c|sa)_[A-Za-z0-9+/=_-]{32,}"
              r"|NRAK-[A-Z0-9]{27}|lin_api_[A-Za-z0-9]{40}|ntn_[0-9]{11}[A-Za-z0-9]{35}|dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}"
              r"|ATATT3[A-Za-z0-9_=-]{150,}", boundary_before=_WORD),
    _Detector("mailchimp-key", r"[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])", boundary_before=_WORD),
    _Detector("telegram-bot-token", r"[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", boundary_before=_WORD),
    _Detector("discord-bot-token", r"[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}", boundary_before=_WORD),
    _Detector("bearer-token", r"bearer\s+[a-z0-9._~+/=-]{8,}", folded=True, boundary_before=_WORD),
    _Detector("basic-auth", r"basic\s+[a-z0-9+/]{12,}={0,2}(?![a-z0-9+/=])", folded=True, boundary_before=_WORD),
    # scheme://user:password@host — a userinfo with a password part.
    _Detector("credentialed-url", r"://[^\s/?#@:\"'<>]*:[^\s/?#@\"'<>]+@"),
)

# The literal start of every vendor-prefixed credential above: what the decoded layers look for written
# backwards, in rot13, or cut short at the end of a field (benchpack/bundles/secret_layers.py).
VENDOR_ANCHORS = (
    "sk-", "sk-ant-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA", "AGPA", "AIDA", "AROA",
    "ANPA", "ABIA", "ACCA", "hf_", "api_org_", "glpat-", "gldt-", "glrt-", "glcbt-", "GR1348941", "xoxb-", "xoxp-",
    "xoxa-", "xoxo-", "xoxs-", "xoxr-", "xoxe-", "xapp-", "hooks.slack.com/", "discord.com/api/webhooks/",
    "sk_live_", "rk_live_", "sk_test_", "rk_test_", "AIza", "GOCSPX-", "ya29.", "eyJ", "SG.", "npm_", "pypi-AgE",
    "AccountKey=", "sq0atp-", "sq0csp-", "shpat_", "shpss_", "dop_v1_", "doo_v1_", "dapi", "gsk_", "r8_", "pplx-",
    "xai-", "hvs.", "hvb.", "PMAK-", "sntrys_", "glc_", "glsa_", "NRAK-", "lin_api_", "ntn_", "dp.pt.", "ATATT3",
    "-----BEGIN", "PuTTY-User-Key-File-", "AGE-SECRET-KEY-1",
)

def _after_any(words: tuple[str, ...], *tails: str) -> str:
    # Look-behinds placed *after* a literal anchor, so the engine still jumps
    # from anchor to anchor. Python needs each look-behind to be fixed-width,
    # so only the words' last characters are compared here; callers re-check.
    width = min(len(word) for word in words)
    groups = ["|".join(sorted({re.escape(word[-width:] + tail) for word in words})) for tail in tails]
    return "(?:" + "|".join(f"(?<={group})" for group in groups) + ")"


# `"<key>": "<value>` (also `\"<key>\": \"` inside an escaped JSON string),
# found by its `":`; the whole key is checked in Python.
_JSON_VALUE = r'\s*\\?"(?P<value>[^"\\]*)'
_JSON_SECRET_FIELDS = (
    re.compile('":' + _after_any(_SECRET_KEY_LAST_WORDS, '":', '\\":') + _JSON_VALUE),
    re.compile(r'"\s+:' + _JSON_VALUE),  # rare: space before the colon
)
_TOKENIZED_QUERY = re.compile(
    "=" + _after_any(tuple(p + key for key in _QUERY_SECRET_KEYS for p in "?&;"), "=") + r"""[^&#\s"'<>]"""
)
_COMPILED = tuple((detector, re.compile(detector.pattern)) for detector in _DETECTORS)

# keyword-secret: `API_KEY=…`, `password: …`, `"client_secret" => '…'` in text that is not a JSON member
# (those are secret-json-field): a value of 16+ characters holding letters and digits with at least
# KEYWORD_MIN_ENTROPY bits per character, as detect-secrets' KeywordDetector and HighEntropyString
# do together. Found by its separator; the key before it is read back in Python.
_KEYWORD_VALUE_CHARS = r"[A-Za-z0-9_+/=.~-]"
_KEYWORD_ASSIGNMENT = re.compile(r"""[:=]>?[ \t]*['"]?(?P<value>""" + _KEYWORD_VALUE_CHARS + "{16,})")
KEYWORD_MIN_ENTROPY = 3.0


# Python's `\s` on str: the str.isspace() characters (tests/bundles/test_secrets_scan.py
# keeps this list complete). RE2's `\s` is only [\t\n\f\r ], so a prefilter
# using it would miss "Bearer<U+2003>token", which the precise scan flags.
PYTHON_SPACE_CHARACTERS = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
_RE2_SPACE = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PYTHON_SPACE_CHARACTERS) + "]"


def _build_prefilter(extra_patterns: tuple[str, ...] = ()):
    """The RE2 set of the secret prefilter; `extra_patterns` (other prefilters that
    want the same single pass) get the indices after SECRET_PATTERN_COUNT."""
    try:
        import re2
    except ImportError:  # the precise scan alone is just slower
        return None
    patterns = [
        # The detectors without their boundary checks (RE2 has no look-arounds).
        *(("(?i)" if d.folded else "") + re.sub(r"\(\?![^)]*\)", "", d.pattern) for d in _DETECTORS),
        "(?i)[?&;](?:" + "|".join(re.escape(key) for key in _QUERY_SECRET_KEYS) + r""")=[^&#\s"'<>]""",
        # Any quoted key ending in a secret word, followed by a string value
        # (also escaped, also with spaces around the colon).
        r'(?i)(?:' + "|".join(_SECRET_KEY_LAST_WORDS) + r')\\?"\s*:\s*\\?"',
        # keyword-secret: a secret-named key assigned a long value (the entropy test is Python's).
        r"(?i)(?:" + "|".join(_SECRET_KEY_LAST_WORDS) + r")['\"]?[ \t]*[:=]>?[ \t]*['\"]?" + _KEYWORD_VALUE_CHARS + "{16}",
    ]
    # Every repeated `\s` (outside a character class: inside one it is always
    # negated, where RE2's narrower `\s` only matches more) as Python's.
    patterns = [pattern.replace("\\s+", _RE2_SPACE + "+").replace("\\s*", _RE2_SPACE + "*") for pattern in patterns]
    patterns += extra_patterns
    prefilter = re2.Set.SearchSet()
    for pattern in patterns:
        if prefilter.Add(pattern) < 0:
            raise ValueError(f"RE2 rejected secret prefilter pattern {pattern!r}")
    prefilter.Compile()
    return prefilter


_PREFILTER = _build_prefilter()
SECRET_PATTERN_COUNT = len(_DETECTORS) + 3


def combined_prefilter(extra_patterns: tuple[str, ...]):
    """One RE2 set for the secret prefilter plus `extra_patterns` (None without RE2):
    `Match(data)` lists the patterns found; indices < SECRET_PATTERN_COUNT are secret ones."""
    return _build_prefilter(extra_patterns)


def is_secret_key_name(key: str) -> bool:
    name = key.lower().replace("-", "_").replace(".", "_")
    if name in _SECRET_KEY_NAMES:
        return True
    return name.endswith(_SECRET_KEY_SUFFIXES)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    find = text.find
    pos = find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    return starts


def might_contain_secret(text: str | bytes) -> bool:
    """One linear-time RE2 pass over `text` (str or UTF-8 bytes): False means the scan would find nothing.

    The prefilter patterns are deliberately looser than the detectors below
    (no boundary or key-name checks), so they can only over-report.
    """
    if _PREFILTER is None:
        return True
    try:
        return _PREFILTER.Match(text) is not None
    except UnicodeEncodeError:  # a lone surrogate (JSON's "\ud800" decodes to one): RE2 reads UTF-8 only
        return _PREFILTER.Match(without_surrogates(text)) is not None


def without_surrogates(text: str) -> str:
    """`text` with each lone surrogate as `?` (same length, so offsets hold)."""
    return text.encode("utf-8", errors="replace").decode("utf-8")


def scan_text(text: str) -> list[SecretHit]:
    """Every suspected credential in `text`, in line order; never the matched text."""
    if not might_contain_secret(text):
        return []
    return _scan_precisely(text)


def _scan_precisely(text: str) -> list[SecretHit]:
    folded = _fold_case(text)
    offsets: list[tuple[int, str]] = []
    for detector, pattern in _COMPILED:
        haystack = folded if detector.folded else text
        before = detector.boundary_before
        for match in pattern.finditer(haystack):
            start = match.start()
            if before and start > 0 and haystack[start - 1] in before:
                continue
            offsets.append((start, detector.kind))
    for match in _TOKENIZED_QUERY.finditer(folded):
        opener = _query_start(folded, match.start())
        if opener is not None:
            offsets.append((opener, "tokenized-query"))
    for match in (m for pattern in _JSON_SECRET_FIELDS for m in pattern.finditer(folded)):
        value = match.group("value")
        key_start = _quoted_key_start(folded, match.start())
        if key_start is None or value.strip() in _PLACEHOLDER_VALUES:
            continue
        key = folded[key_start : match.start()].removesuffix("\\")
        if is_secret_key_name(key):
            offsets.append((key_start, "secret-json-field"))
    json_keys = {offset for offset, kind in offsets if kind == "secret-json-field"}
    for match in _KEYWORD_ASSIGNMENT.finditer(text):
        key_start = _assigned_key_start(folded, match.start())
        if key_start is not None and key_start not in json_keys and _looks_random(match.group("value")):
            offsets.append((key_start, "keyword-secret"))
    if not offsets:
        return []
    starts = _line_starts(text)
    hits = set()
    for offset, kind in offsets:
        index = bisect.bisect_right(starts, offset) - 1
        hits.add(SecretHit(kind=kind, line=index + 1, column=offset - starts[index] + 1))
    return sorted(hits, key=lambda hit: (hit.line, hit.column, hit.kind))


_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")


def _fold_case(text: str) -> str:
    """Lower-case `text` keeping every offset (str.lower() maps a few characters, like 'İ', to two)."""
    folded = text.lower()
    if len(folded) == len(text):
        return folded  # lower() never shrinks a character, so equal length means 1:1
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _query_start(text: str, equals: int) -> int | None:
    """Offset of the `?`/`&`/`;` opening a credential query parameter whose `=` is at `equals`."""
    index = equals
    while index > max(0, equals - 32) and text[index - 1] not in "?&;":
        index -= 1
    if index == 0 or text[index:equals] not in _QUERY_SECRET_KEYS:
        return None
    return index - 1


def _quoted_key_start(text: str, closing_quote: int) -> int | None:
    """Where the quoted JSON key that ends at `closing_quote` begins, or None if it is not one."""
    end = closing_quote - 1 if text[closing_quote - 1 : closing_quote] == "\\" else closing_quote
    index = end
    lowest = max(0, end - 64)
    while index > lowest and text[index - 1] in _KEY_CHARS:
        index -= 1
    if index == end or text[index - 1 : index] != '"':
        return None
    return index


def _assigned_key_start(text: str, separator: int) -> int | None:
    """Where the secret-named key assigned at `separator` (`:` or `=`) begins, or None.

    Skips spaces and one closing quote; a `"key":` (a JSON member) counts only when
    the value is not a string, since secret-json-field judges those."""
    index = separator
    while index > 0 and text[index - 1] in " \t":
        index -= 1
    quote = text[index - 1 : index]
    if quote in ("'", '"'):
        if quote == '"' and text[separator + 1 :].lstrip(" \t")[:1] == '"':
            return None
        index -= 1
    end = index
    lowest = max(0, end - 64)
    while index > lowest and text[index - 1] in _KEY_CHARS:
        index -= 1
    if index == end or not is_secret_key_name(text[index:end]):
        return None
    return index


def _looks_random(value: str) -> bool:
    """Letters and digits both, and at least KEYWORD_MIN_ENTROPY bits of Shannon entropy per character."""
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    counts = collections.Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy >= KEYWORD_MIN_ENTROPY


def scan_bytes(data: bytes) -> list[SecretHit]:
    """Scan bytes that may not be valid UTF-8 (undecodable bytes cannot hide a match).

    The prefilter runs on the bytes themselves: handing RE2 a str would
    re-encode the whole file first.
    """
    if not might_contain_secret(data):
        return []
    return _scan_precisely(data.decode("utf-8", errors="replace"))


def scan_decoded_json(data: bytes, *, lines: bool) -> list[SecretHit]:
    """Scan what JSON escapes stand for: `\\u0073k-…` is `sk-…`, `https:\\/\\/u:p@host` a credentialed URL.

    The byte scan reads the file as written, so a credential spelled with
    escapes passes it. Every JSON document (each line when `lines`) that holds
    a backslash is decoded and scanned again twice: re-serialized without
    escapes (for the `"key": "value"` detectors) and as its strings one per
    line (a `\\n` inside a string is a real line break there). Hits carry the
    document's line; columns refer to the decoded text. Text that is not JSON
    is left to the byte scan.
    """
    if b"\\" not in data:
        return []
    text = data.decode("utf-8", errors="replace")
    documents = enumerate(text.split("\n"), start=1) if lines else [(1, text)]
    hits: dict[tuple[int, str], SecretHit] = {}
    for number, document in documents:
        if "\\" not in document:
            continue
        try:
            value = json.loads(document)
        except (ValueError, RecursionError):
            continue
        views = (json.dumps(value, ensure_ascii=False), "\n".join(json_strings(value)))
        for view in views:
            for hit in scan_text(view):
                hits.setdefault((number, hit.kind), SecretHit(kind=hit.kind, line=number, column=hit.column))
    return sorted(hits.values(), key=lambda hit: (hit.line, hit.column, hit.kind))


def json_strings(value) -> list[str]:
    """Every key and string value of a decoded JSON document, depth first, without recursion."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            found.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
