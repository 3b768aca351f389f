"""Secrets in other clothes: the secret scan run again on what a file's text decodes to.

`secrets_scan` reads a file as written (and, for JSON, with its escapes
decoded). A credential written some other way passes it: base64 or hex of
`sk-…`, `%73k-…`, the key written backwards, zero-width characters inside
it, or its halves in two adjacent JSON strings. As established scanners do
(trufflehog's decoders, GitHub secret scanning's base64 variants), this
module decodes such layers and scans what they stand for:

- base64 / base64url runs of at least MIN_BASE64 characters, hex runs of at
  least MIN_HEX digits and %-encoded runs, each decoded when the result is
  printable UTF-8 text (random bytes, digests and ids are not text);
- the text with zero-width and invisible formatting characters removed;
- the text reversed (line by line, so each hit keeps its line);
- for JSON and JSON Lines, the string values of each object or array joined
  end to end, so `["sk-proj-", "Zx9Yw8…"]` reads as one key.

Layers nest up to MAX_DEPTH deep (base64 of a reversed key, %-encoded
base64). A hit names its layer ("base64", "reversed+base64", …) and, as
every secret finding does, never the text.

Cost: one RE2 pass over the bytes decides which layers can apply at all
(`_gates()`); only files that pass a gate are decoded. Ordinary result files
(rows, metadata, manifests) pass none, so for them the layers cost that one
pass: figures in docs/bundles.md ("Secrets in other clothes").
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import json
import re
import urllib.parse
from dataclasses import dataclass

from benchpack.bundles.secrets_scan import SecretHit, _line_starts, scan_text

MIN_BASE64 = 20  # 15 bytes: shorter than any credential the detectors know
MIN_HEX = 32  # 16 bytes
MAX_DEPTH = 2
MAX_DECODED_RUN = 1 << 20  # a run longer than 1 MiB is data, not a hidden key

# Zero-width and invisible formatting characters (Unicode Cf ones that render as nothing), and the soft hyphen.
ZERO_WIDTH = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"
_ZERO_WIDTH_TABLE = dict.fromkeys(map(ord, ZERO_WIDTH))

# The detectors' anchors written backwards: `sk-` is `-ks`, `ghp_` is `_phg`, `Bearer ` is ` reraeB`.
_REVERSED_ANCHORS = (
    r"-ks", r"_[pousr]hg", r"_tap_buhtig", r"A(?:IKA|ISA|PGA|ADIA|ORA|PNA)", r"-[abposre]xox", r"azIA",
    r"(?i:\sreraeb|\scisab)", r"NIGEB-----", r"@[^\s/?#@\"'<>]+:[^\s/?#@:\"'<>]*//:", r'"\s*:\s*"[a-z_]*(?:yek|terces|drowssap|nekot)"',
)
_B64_RUN = r"[A-Za-z0-9+/]{%d,}={0,2}|[A-Za-z0-9_-]{%d,}={0,2}" % (MIN_BASE64, MIN_BASE64)
_HEX_RUN = r"[0-9a-fA-F]{%d,}" % MIN_HEX
_URL_RUN = r"""[^\s"'<>%]*(?:%[0-9A-Fa-f]{2}[^\s"'<>%]*)+"""
# An anchor whose key is cut short by the end of a JSON string: the rest may be in the next one. A URL
# cut after `user:` counts only when what follows the colon is not all digits (`http://host:8080` is a port).
_ANCHOR_AT_END = (
    r"""(?:sk-|gh[pousr]_|github_pat_|A(?:KIA|SIA|GPA|IDA|ROA|NPA)|xox[abposre]-|AIza|-----BEGIN|"""
    r"""(?i:bearer|basic)\s+)[^"\s]{0,40}|://[^\s/?#@:"'<>]*:(?:[^"\s/@]{0,40}[^0-9"\s/@][^"\s/@]{0,40})?"""
)
_SPLIT_ANCHOR = r"""(?:%s)\\?"\s*[,:\]}]""" % _ANCHOR_AT_END
_SPLIT_END = re.compile("(?:%s)$" % _ANCHOR_AT_END)


def _base64_gate() -> str:
    """A 20-character window of standard base64 holding an upper-case letter: text encoded as base64 almost
    always has one, lower-case URL paths and words never do. (Asking for a digit too made RE2's DFA so large
    that it fell back to a slow path on source code: 20 MB/s instead of 200.)"""
    b = "[A-Za-z0-9+/]"
    return "(?:" + "|".join(f"{b}{{{i}}}[A-Z]{b}{{{MIN_BASE64 - i - 1}}}" for i in range(MIN_BASE64)) + ")"


# Gate index -> layer. One RE2 pass over a file answers all of them.
_GATE_PATTERNS = (
    ("base64", _base64_gate()),
    ("hex", _HEX_RUN),
    ("url", r"%[0-9A-Fa-f]{2}"),
    # The characters themselves, as alternatives: RE2 reads them in str and UTF-8 bytes patterns alike.
    ("zero-width", "|".join(ZERO_WIDTH)),
    ("reversed", "|".join(_REVERSED_ANCHORS)),
    ("joined", _SPLIT_ANCHOR),
)


@functools.cache
def _gates():
    """Built on first use: compiling the base64 window set takes ~0.3 s, which `import benchpack` should not pay."""
    try:
        import re2
    except ImportError:
        return None
    options = re2.Options()
    options.max_mem = 64 << 20  # the base64 window alternation needs a larger DFA than the default 8 MiB
    gates = re2.Set.SearchSet(options)
    for _, pattern in _GATE_PATTERNS:
        if gates.Add(pattern) < 0:
            raise ValueError(f"RE2 rejected secret layer gate {pattern!r}")
    gates.Compile()
    return gates


_PY_GATES = tuple((name, re.compile(pattern)) for name, pattern in _GATE_PATTERNS)
_B64 = re.compile(_B64_RUN)
_HEX = re.compile(_HEX_RUN)
_URL = re.compile(_URL_RUN)


@dataclass(frozen=True)
class LayeredHit:
    hit: SecretHit
    layer: str  # "base64", "reversed", "zero-width+hex", ...

    @property
    def description(self) -> str:
        return f"{self.hit.description} hidden as {self.layer.replace('+', ' of ')}"


def layers_that_apply(data: str | bytes) -> set[str]:
    """The layers whose gate matches `data` (one RE2 pass; Python's re without RE2)."""
    gates = _gates()
    if gates is None:
        sample = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        return {name for name, pattern in _PY_GATES if pattern.search(sample)}
    return {_GATE_PATTERNS[index][0] for index in (gates.Match(data) or ())}


def scan_layers(data: bytes, *, json_documents: str | None = None, applying: set[str] | None = None) -> list[LayeredHit]:
    """Secrets hidden in a decoded layer of `data`, one hit per (line, kind, layer).

    `json_documents`: "lines" (JSON Lines), "document" (one JSON document) or None (not JSON: no
    joined-fields layer). Hits carry the line of the encoded text in `data`. `applying`: the result of
    `layers_that_apply(data)` when the caller has it already (validation computes it on a background thread).

    Only the lines where a gate matches are decoded (a credential in any of these forms sits on one
    line), so a large file with a few odd lines costs one gate pass, one search and those lines.
    """
    applying = layers_that_apply(data) if applying is None else applying
    if not applying:
        return []
    # Byte offsets throughout: RE2 maps every match on a str back to character offsets, a pass each.
    starts = _byte_line_starts(data)
    candidates = sorted({bisect.bisect_right(starts, match.start()) - 1 for match in _line_finder().finditer(data)})
    found: dict[tuple, LayeredHit] = {}
    for index in candidates:
        end = starts[index + 1] - 1 if index + 1 < len(starts) else len(data)
        line = data[starts[index]:end].decode("utf-8", errors="replace")
        per_line = "lines" if json_documents == "lines" else None
        for hit in _scan(line, layers_that_apply(line), per_line, depth=1, trail=""):
            at = LayeredHit(SecretHit(hit.hit.kind, index + 1, hit.hit.column), hit.layer)
            found.setdefault((at.hit.line, at.hit.kind, at.layer), at)
    if json_documents == "document" and "joined" in applying:
        for hit in _joined_fields(data.decode("utf-8", errors="replace"), "document", ""):
            found.setdefault((hit.hit.line, hit.hit.kind, hit.layer), hit)
    return sorted(found.values(), key=lambda h: (h.hit.line, h.hit.column, h.hit.kind, h.layer))


def _byte_line_starts(data: bytes) -> list[int]:
    starts, find = [0], data.find
    pos = find(b"\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = find(b"\n", pos + 1)
    return starts


@functools.cache
def _line_finder():
    """Every gate as one search pattern, to find the lines a gate matched on."""
    combined = "|".join(f"(?:{pattern})" for _, pattern in _GATE_PATTERNS).encode()  # UTF-8, as RE2 reads it
    try:
        import re2
    except ImportError:
        return re.compile(combined)
    options = re2.Options()
    options.max_mem = 64 << 20
    return re2.compile(combined, options=options)


def _scan(text: str, applying: set[str], json_documents: str | None, depth: int, trail: str):
    """Hits in each applying layer of `text`, with line numbers of `text`."""
    starts = None

    def line_of(offset: int) -> tuple[int, int]:
        nonlocal starts
        starts = starts or _line_starts(text)
        index = bisect.bisect_right(starts, offset) - 1
        return index + 1, offset - starts[index] + 1

    def decoded(layer: str, plain: str, line: int, column: int):
        """`plain` (decoded from one run on `line`) scanned as is, and its own layers while depth allows."""
        name = f"{trail}+{layer}" if trail else layer
        for hit in scan_text(plain):
            yield LayeredHit(SecretHit(hit.kind, line, column), name)
        if depth < MAX_DEPTH:
            inner = layers_that_apply(plain) - {"joined"}
            for deeper in _scan(plain, inner, None, depth + 1, name):
                yield LayeredHit(SecretHit(deeper.hit.kind, line, column), deeper.layer)

    for layer, pattern, decode in (("base64", _B64, _from_base64), ("hex", _HEX, _from_hex),
                                   ("url", _URL, _from_url)):
        if layer not in applying:
            continue
        for match in pattern.finditer(text):
            run = match.group()
            plain = decode(run)
            if plain is not None:
                yield from decoded(layer, plain, *line_of(match.start()))
            elif layer != "url" and (plain := decode(run[::-1])) is not None:  # the encoding written backwards
                yield from decoded(f"reversed+{layer}", plain, *line_of(match.start()))
    if "zero-width" in applying:
        stripped = text.translate(_ZERO_WIDTH_TABLE)  # removes characters only: every line keeps its number
        if stripped != text:
            yield from _whole(stripped, "zero-width", trail, depth, json_documents)
    if "reversed" in applying:
        reversed_lines = "\n".join(line[::-1] for line in text.split("\n"))
        yield from _whole(reversed_lines, "reversed", trail, depth, None)
    if "joined" in applying and json_documents is not None:
        yield from _joined_fields(text, json_documents, trail)


def _whole(view: str, layer: str, trail: str, depth: int, json_documents: str | None):
    """A view of the whole text that keeps its lines (stripped, reversed): scanned, and its layers."""
    name = f"{trail}+{layer}" if trail else layer
    for hit in scan_text(view):
        yield LayeredHit(hit, name)
    if depth < MAX_DEPTH:
        yield from _scan(view, layers_that_apply(view) - {layer}, json_documents, depth + 1, name)


def _joined_fields(text: str, json_documents: str, trail: str):
    name = f"{trail}+joined fields" if trail else "joined fields"
    documents = enumerate(text.split("\n"), start=1) if json_documents == "lines" else [(1, text)]
    for number, document in documents:
        if json_documents == "lines" and not _PY_GATES[-1][1].search(document):
            continue
        try:
            value = json.loads(document)
        except (ValueError, RecursionError):
            continue
        for joined in _sibling_strings(value):
            for hit in scan_text(joined):
                yield LayeredHit(SecretHit(hit.kind, number if json_documents == "lines" else hit.line,
                                           hit.column), name)


def _sibling_strings(value) -> list[str]:
    """In each object and array, every string value that ends in a cut-short anchor joined end to end with
    the string values after it (joining only there keeps `"http://host:1"` + `"a@b"` from reading as one)."""
    joined, stack = [], [value]
    while stack:
        item = stack.pop()
        children = list(item.values()) if isinstance(item, dict) else item if isinstance(item, list) else []
        strings = [child for child in children if isinstance(child, str)]
        joined += ["".join(strings[i:]) for i in range(len(strings) - 1) if _SPLIT_END.search(strings[i])]
        stack.extend(child for child in children if isinstance(child, (dict, list)))
    return joined


def _text_or_none(raw: bytes) -> str | None:
    """Decoded bytes as text when they are printable UTF-8 (a key is; a digest or random id is not)."""
    try:
        plain = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for c in plain if c.isprintable() or c in "\t\n\r")
    return plain if plain and printable >= 0.95 * len(plain) else None


def _from_base64(run: str) -> str | None:
    if len(run) > MAX_DECODED_RUN or run.lower() == run or run.upper() == run:
        return None
    body = run.rstrip("=")
    padded = body + "=" * (-len(body) % 4)
    altchars = b"-_" if ("-" in body or "_" in body) else None
    try:
        raw = base64.b64decode(padded, altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _text_or_none(raw)


def _from_hex(run: str) -> str | None:
    if len(run) > MAX_DECODED_RUN:
        return None
    try:
        return _text_or_none(bytes.fromhex(run[: len(run) // 2 * 2]))
    except ValueError:
        return None


def _from_url(run: str) -> str | None:
    if len(run) > MAX_DECODED_RUN:
        return None
    try:
        plain = urllib.parse.unquote(run, errors="strict")
    except UnicodeDecodeError:
        return None
    return plain if plain != run else None
