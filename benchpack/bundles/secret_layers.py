"""Secrets in other clothes: the secret scan run again on what a file's text decodes to.

`secrets_scan` reads a file as written (and, for JSON, with its escapes
decoded). A credential written some other way passes it: base64, base32 or
hex of `sk-…`, `%73k-…`, `&#115;k-…`, `\\x73k-…`, rot13, the key written
backwards or with its letters spaced out, with Cyrillic or fullwidth
look-alikes, zero-width characters inside it, or its halves in two adjacent
JSON strings or two adjacent rows. As established scanners do (trufflehog's
decoders, GitHub secret scanning's base64 variants), this module decodes such
layers and scans what they stand for:

- runs decoded in place: base64 / base64url (>= MIN_BASE64 characters), base32
  (>= MIN_BASE32, one case), hex (>= MIN_HEX digits) and %-encoded runs, each
  kept when the result is printable UTF-8 text (digests and ids are not text);
- views of the whole line: HTML character references (named, decimal, hex),
  `\\xNN` / octal `\\NNN` / `\\uNNNN` escapes, letters spaced out with one
  repeated separator (`s k - p r o j`, `s.k.-.p`), rot13, Unicode look-alikes
  mapped to ASCII (confusables_table, Unicode's confusables.txt; Unicode tag
  characters as the ASCII they mirror), zero-width characters removed, each
  line backwards;
- for JSON and JSON Lines, string values joined end to end: the values after
  one that ends in a cut-short credential (a vendor prefix, or part of one),
  in the same document and in the next row.

Layers nest up to MAX_DEPTH deep (base64 of a reversed key, HTML entities of
rot13). Decoding is bounded: each call may decode at most
DECODE_BUDGET_FACTOR x the input plus DECODE_BUDGET_FLOOR characters in all;
past that it stops and reports `decode-budget`, so a file built to make the
decoding explode (nested encodings, a gate firing on every line) is refused
rather than published unscanned, and costs at most that much. A hit names its
layer ("base64", "reversed+base64", …) and the JSON field it sits in and, as
every secret finding does, never the text.

Cost: one RE2 pass over the bytes decides which layers can apply at all
(`_gates()`); only lines where a gate matches are decoded. Ordinary result
files pass few gates: figures in docs/bundles.md ("Secrets in other clothes").
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import html
import json
import re
import unicodedata
import urllib.parse
from dataclasses import dataclass

from benchpack.bundles.confusables_table import LOOKALIKES
from benchpack.bundles.secrets_scan import VENDOR_ANCHORS, SecretHit, scan_text, without_surrogates

MIN_BASE64 = 20  # 15 bytes: shorter than any credential the detectors know
MIN_BASE32 = 24  # 15 bytes
MIN_HEX = 32  # 16 bytes
MIN_SPACED = 15  # spaced-out characters: the shortest credential the detectors know has 15
MAX_DEPTH = 3
MAX_DECODED_RUN = 1 << 20  # a run longer than 1 MiB is data, not a hidden key
DECODE_BUDGET_FACTOR = 16  # characters decoded, in all layers together, per character of input ...
DECODE_BUDGET_FLOOR = 1 << 20  # ... plus this much
JOIN_WINDOW = 256  # characters of each side a join looks at
JOIN_PARTNERS = 64  # strings after a cut-short one that it is joined with
JOIN_PREFIX_PARTNERS = 8  # ... when it is cut inside the vendor prefix
MAX_NAMED_FIELDS = 20  # findings per file whose JSON field is looked up (each costs a scan of its line)

# Zero-width and invisible formatting characters (Unicode Cf ones that render as nothing), the soft hyphen,
# the combining grapheme joiner, Hangul fillers and variation selectors.
ZERO_WIDTH = ("\u00ad\u034f\u115f\u1160\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\u3164\ufeff\uffa0"
              + "".join(map(chr, range(0xFE00, 0xFE10))))
# Look-alike -> ASCII, one character for one (offsets and JSON structure hold). Unicode tag characters
# (U+E0020-E007E) mirror printable ASCII invisibly ("ASCII smuggling"): mapped to what they mirror.
HOMOGLYPHS = {ord(c): target for target, sources in LOOKALIKES.items() for c in sources}
HOMOGLYPHS.update({0xE0000 + code: chr(code) for code in range(0x20, 0x7F)})
# Compatibility forms whose NFKC is one ASCII letter, digit, `-`, `_` or `.`: fullwidth, mathematical
# alphanumerics, letterlike and enclosed forms, super- and subscripts. NFKC is exact where confusables.txt
# gives the look-alike prototype (𝟏 is "l" there, `1` here; 𝐦 is "rn" there, so absent).
_COMPATIBILITY_BLOCKS = ((0x2070, 0x218F), (0x2460, 0x24FF), (0xFF00, 0xFFEF), (0x1D400, 0x1D7FF), (0x1F100, 0x1F1FF))
HOMOGLYPHS.update({code: folded for low, high in _COMPATIBILITY_BLOCKS for code in range(low, high + 1)
                   if len(folded := unicodedata.normalize("NFKC", chr(code))) == 1
                   and (folded.isascii() and (folded.isalnum() or folded in "-_."))})
_ROT13 = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                       "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm")


_ROT13_BYTES = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                               b"NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm")


def _rot13(text: str) -> str:
    """On the UTF-8 bytes (only ASCII letters change; str.translate was 10 MB/s on non-ASCII text)."""
    try:
        return text.encode().translate(_ROT13_BYTES).decode()
    except UnicodeEncodeError:  # a lone surrogate
        return text.translate(_ROT13)


def _without_lookalikes(text: str) -> str:
    """Look-alikes as ASCII (str.translate with a dict: ~10 MB/s; translating only the non-ASCII
    stretches was slower still on Cyrillic prose, one callback per word)."""
    return text.translate(HOMOGLYPHS)


def _without_zero_width(text: str) -> str:
    for character in ZERO_WIDTH:
        if character in text:
            text = text.replace(character, "")
    return text


_FOLLOW = r"[A-Za-z0-9_+/=.-]{6}"  # what follows an anchor in any credential: keeps "fx-" (rot13 of sk-) in prose out
# The detectors' anchors written backwards: `sk-` is `-ks`, `ghp_` is `_phg`, `Bearer ` is ` reraeB`.
_REVERSED_ANCHORS = (
    r"(?:%s)" % "|".join(sorted({re.escape(anchor[::-1]) for anchor in VENDOR_ANCHORS if len(anchor) >= 3})),
    r"(?i:\sreraeb|\scisab)", r"@[^\s/?#@\"'<>]+:[^\s/?#@:\"'<>]*//:", r'"\s*:\s*"[a-z_]*(?:yek|terces|drowssap|nekot)"',
)
_ROT13_ANCHORS = (
    r"(?:%s)%s" % ("|".join(sorted({re.escape(_rot13(anchor)) for anchor in VENDOR_ANCHORS if len(anchor) >= 3})), _FOLLOW),
    r"(?i:oreere|onfvp)\s+[a-z0-9._~+/=-]{8}", r'"\s*:\s*"[a-z_]*(?:xrl|frperg|cnffjbeq|gbxra)"',
)
_B64_RUN = r"[A-Za-z0-9+/]{%d,}={0,2}|[A-Za-z0-9_-]{%d,}={0,2}" % (MIN_BASE64, MIN_BASE64)
_B32_RUN = r"[A-Z2-7]{%d,}={0,6}|[a-z2-7]{%d,}={0,6}" % (MIN_BASE32, MIN_BASE32)
_HEX_RUN = r"[0-9a-fA-F]{%d,}" % MIN_HEX
_URL_RUN = r"""[^\s"'<>%]*(?:%[0-9A-Fa-f]{2}[^\s"'<>%]*)+"""
_HTML_GATE = r"&#[0-9]{2,7}|&#[xX][0-9a-fA-F]{1,6}|&[A-Za-z][A-Za-z0-9]{1,31};"
# One backslash or more (JSON writes `\x73` as `\\x73`); `\uNNNN` only after two (one is JSON's own escape,
# which secrets_scan.scan_decoded_json decodes).
_ESCAPE_GATE = r"\\x[0-9a-fA-F]{2}|\\[0-7]{3}|\\\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}"
_ESCAPE = re.compile(r"\\+(?:x([0-9a-fA-F]{2})|([0-7]{3})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))")
_SPACE_SEPARATORS = r"[ \t.,;:|/*~+_-]"
_SPACED_GATE = r"[A-Za-z0-9](?:%s{1,3}[A-Za-z0-9]){%d,}" % (_SPACE_SEPARATORS, MIN_SPACED - 1)
# A character, a separator of 1-3 characters, and the same separator between every later character.
_SPACED = re.compile(r"[A-Za-z0-9_-](%s{1,3})(?:[A-Za-z0-9_-]\1){%d,}[A-Za-z0-9_-]" % (_SPACE_SEPARATORS, MIN_SPACED - 2))


def _class_of(codes) -> str:
    """A character class of the characters themselves (RE2 and Python's re both read them, str or UTF-8)."""
    return "[" + "".join(chr(code) for code in sorted(codes)) + "]"


# An anchor whose key is cut short by the end of a JSON string: the rest may be in the next one. A URL
# cut after `user:` counts only when what follows the colon is not all digits (`http://host:8080` is a port);
# so does a string that ends in the first characters of a vendor prefix (`s` + `k-…`), after a non-word character.
_PREFIXES = sorted({anchor[:n] for anchor in VENDOR_ANCHORS for n in range(1, len(anchor))}, key=len, reverse=True)
_ANCHOR_AT_END = (
    r"""(?:%s|(?i:bearer|basic)\s+)[^"\s]{0,80}|://[^\s/?#@:"'<>]*:(?:[^"\s/@]{0,40}[^0-9"\s/@][^"\s/@]{0,40})?"""
    % "|".join(re.escape(anchor) for anchor in sorted(VENDOR_ANCHORS, key=len, reverse=True))
)
_PREFIX_AT_END = r"""(?:^|[^A-Za-z0-9_\\])(?:%s)""" % "|".join(re.escape(prefix) for prefix in _PREFIXES)
_SPLIT_ANCHOR = r"""(?:%s|%s)\\?"\s*[,:\]}]""" % (_ANCHOR_AT_END, _PREFIX_AT_END.replace("^|", ""))
_SPLIT_END = re.compile("(?:%s|%s)$" % (_ANCHOR_AT_END, _PREFIX_AT_END))
_ANCHORED_END = re.compile("(?:%s)$" % _ANCHOR_AT_END)


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
    ("base32", r"[A-Z2-7]{%d}|[a-z2-7]{%d}" % (MIN_BASE32, MIN_BASE32)),
    ("html", _HTML_GATE),
    ("escapes", _ESCAPE_GATE),
    ("spaced", _SPACED_GATE),
    ("rot13", "|".join(_ROT13_ANCHORS)),
    ("homoglyph", _class_of(HOMOGLYPHS)),
    # The characters themselves, as alternatives: RE2 reads them in str and UTF-8 bytes patterns alike.
    ("zero-width", "|".join(ZERO_WIDTH)),
    ("reversed", "|".join(_REVERSED_ANCHORS)),
    ("joined", _SPLIT_ANCHOR),
)
# Layers that give the same text when applied twice (or undo themselves): never applied again below themselves.
_IDEMPOTENT = frozenset({"zero-width", "reversed", "rot13", "homoglyph", "spaced"})


# The gates in two RE2 sets, one pass each: counted repetitions (base64's windows, base32's and the
# spaced-out runs) and long alternations (the anchors) multiply a single set's DFA states; all in one set
# took 0.4 s to build its DFA on the first 2,000-row file a process reads (docs/bundles.md). Warm, each
# pass runs at ~450 MB/s.
_GATE_GROUPS = (("base64", "hex", "url", "zero-width"),
                ("base32", "spaced", "html", "escapes", "rot13", "homoglyph", "reversed", "joined"))
_GATE_INDEX = {name: index for index, (name, _) in enumerate(_GATE_PATTERNS)}


@functools.cache
def _gates():
    """Built on first use: compiling the base64 window set takes ~0.3 s, which `import benchpack` should not pay."""
    try:
        import re2
    except ImportError:
        return None
    built = []
    for group in _GATE_GROUPS:
        options = re2.Options()
        options.max_mem = 64 << 20  # the base64 window alternation needs a larger DFA than the default 8 MiB
        gates = re2.Set.SearchSet(options)
        for name in group:
            if gates.Add(_GATE_PATTERNS[_GATE_INDEX[name]][1]) < 0:
                raise ValueError(f"RE2 rejected secret layer gate {name!r}")
        gates.Compile()
        built.append((gates, group))
    return tuple(built)


@functools.cache
def _py_gates():
    return tuple((name, re.compile(pattern)) for name, pattern in _GATE_PATTERNS)


_RUNS = {"base64": _B64_RUN, "base32": _B32_RUN, "hex": _HEX_RUN, "url": _URL_RUN}


@functools.cache
def _run_finder(layer: str):
    """The run pattern of a layer, on UTF-8 bytes, in RE2: linear time. (Python's re took 5.6 ms on one
    1.5 KB row for the %-encoded run, and time quadratic in a long line without spaces holding one `%41`.)"""
    try:
        import re2
    except ImportError:
        return re.compile(_RUNS[layer].encode())
    return re2.compile(_RUNS[layer].encode())


@functools.cache
def _join_gate():
    """The joined-fields gate for one line at a time (RE2: Python's re spends ~1 ms a row on its alternation)."""
    try:
        import re2
    except ImportError:
        return re.compile(_SPLIT_ANCHOR)
    return re2.compile(_SPLIT_ANCHOR)


class DecodeBudgetExceeded(Exception):
    """More was decoded than the budget allows: the scan stops and the file is refused."""


class _Budget:
    """Characters left to decode, and what one line's scan has decoded already: a base64 run is the same
    in the line and in its homoglyph view, a view reached as html-then-rot13 the same as rot13-then-html;
    each is decoded once, at the shallowest depth it was reached (which leaves the most depth below it)."""

    def __init__(self, characters: int):
        self.left = characters
        self.seen: dict[tuple[str, str], int] = {}

    def first_visit(self, layer: str, text: str, depth: int) -> bool:
        key = (layer, text)
        if self.seen.get(key, MAX_DEPTH + 1) <= depth:
            return False
        self.seen[key] = depth
        return True

    def spend(self, characters: int) -> None:
        self.left -= characters
        if self.left < 0:
            raise DecodeBudgetExceeded


def budget_for(data_length: int) -> _Budget:
    return _Budget(DECODE_BUDGET_FACTOR * data_length + DECODE_BUDGET_FLOOR)


@dataclass(frozen=True)
class LayeredHit:
    hit: SecretHit
    layer: str  # "base64", "reversed", "zero-width+hex", "joined fields", "nested layers", ...
    field: str | None = None  # where, for JSON: "/error", "/prompt and /prompt of the next row"

    @property
    def description(self) -> str:
        if self.hit.kind == "decode-budget":
            return ("text nested in more encodings than the secret scan decodes "
                    f"(over {DECODE_BUDGET_FACTOR}x its size), so it cannot be shown to be free of secrets")
        where = f" in field {self.field}" if self.field and self.layer != "joined fields" else ""
        if self.layer == "joined fields":
            return f"{self.hit.description} split across {self.field or 'adjacent JSON strings'}"
        named = " of ".join(LAYER_NAMES.get(layer, layer) for layer in self.layer.split("+"))
        return f"{self.hit.description} hidden as {named}{where}"


LAYER_NAMES = {
    "url": "%-encoding", "html": "HTML character references", "escapes": "backslash escapes (\\x, octal, \\u)",
    "spaced": "spaced-out characters", "homoglyph": "look-alike characters", "zero-width": "zero-width characters",
    "reversed": "reversed text", "joined fields": "joined fields",
}


def layers_that_apply(data: str | bytes) -> set[str]:
    """The layers whose gate matches `data` (one RE2 pass; Python's re without RE2)."""
    gates = _gates()
    if gates is None:
        sample = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        return {name for name, pattern in _py_gates() if pattern.search(sample)}
    if isinstance(data, str):  # encoded once here, not once per set; RE2 reads UTF-8 only
        data = _utf8(data)
    return {group[index] for gate, group in gates for index in (gate.Match(data) or ())}


def scan_layers(data: bytes, *, json_documents: str | None = None, applying: set[str] | None = None) -> list[LayeredHit]:
    """Secrets hidden in a decoded layer of `data`, one hit per (line, kind, layer).

    `json_documents`: "lines" (JSON Lines), "document" (one JSON document) or None (not JSON: no
    joined-fields layer). Hits carry the line of the encoded text in `data` and, in JSON, the field.
    `applying`: the result of `layers_that_apply(data)` when the caller has it already (validation
    computes it on a background thread).

    Only the lines where a gate matches are decoded (a credential in any of these forms sits on one
    line, or on two adjacent rows for a join), so a large file with a few odd lines costs one gate
    pass, one search and those lines. Past the decode budget the result is one `decode-budget` hit.
    """
    applying = layers_that_apply(data) if applying is None else applying
    if not applying and (json_documents is None or not _ESCAPED_NON_ASCII.search(data)):
        return []
    budget = budget_for(len(data))
    found: dict[tuple, LayeredHit] = {}
    line = 1
    try:
        # Byte offsets throughout: RE2 maps every match on a str back to character offsets, a pass each.
        starts = _byte_line_starts(data)
        candidates = _gated_lines(data, starts)
        per_line = "lines" if json_documents == "lines" else None
        escaped = set(_lines_with_escaped_unicode(data, starts)) if json_documents is not None else set()
        for index in sorted(set(candidates) | escaped):
            line = index + 1
            text = _line_text(data, starts, index)
            budget.spend(len(text))
            budget.seen.clear()
            # JSON writes `ѕ`, a zero-width space, a tag character as `\u0455`, `\u200b`, `\udb40\udc73`:
            # the look-alike and zero-width gates see them only in the line with its strings decoded.
            views = [text, _unescaped_strings(text)] if index in escaped else [text]
            for view in views:
                for hit in _scan(view, layers_that_apply(view) - {"joined"}, per_line, 1, "", budget):
                    at = LayeredHit(SecretHit(hit.hit.kind, line, hit.hit.column), hit.layer)
                    found.setdefault((at.hit.line, at.hit.kind, at.layer), at)
        if "joined" in applying and json_documents is not None:
            text = "" if json_documents == "lines" else data.decode("utf-8", errors="replace")
            for hit in _joined_fields(text, json_documents, "", budget, data if json_documents == "lines" else None):
                found.setdefault((hit.hit.line, hit.hit.kind, hit.layer), hit)
    except DecodeBudgetExceeded:
        return [LayeredHit(SecretHit("decode-budget", line, 1), "nested layers")]
    hits = sorted(found.values(), key=lambda h: (h.hit.line, h.hit.column, h.hit.kind, h.layer))
    if json_documents is not None:
        hits = _with_fields(data, starts, hits, json_documents)
    return hits


_ESCAPED_NON_ASCII = re.compile(rb"\\u(?:00[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-fA-F][0-9a-fA-F]{3})")


def _lines_with_escaped_unicode(data: bytes, starts: list[int]) -> list[int]:
    """Indices of the lines holding a JSON `\\uXXXX` escape of a non-ASCII character."""
    return _search_lines(_ESCAPED_NON_ASCII, data, starts)


def _unescaped_strings(line: str) -> str:
    """`line` with each JSON string literal holding a `\\u` escape written out (JSON's own escapes kept)."""
    def written_out(match: re.Match) -> str:
        literal = match.group()
        if "\\u" not in literal:
            return literal
        try:
            return json.dumps(json.loads(literal), ensure_ascii=False)
        except ValueError:
            return literal

    return _STRING_LITERAL.sub(written_out, line)


def _line_text(data: bytes, starts: list[int], index: int) -> str:
    end = starts[index + 1] - 1 if index + 1 < len(starts) else len(data)
    return data[starts[index]:end].decode("utf-8", errors="replace")


def _byte_line_starts(data: bytes) -> list[int]:
    starts, find = [0], data.find
    pos = find(b"\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = find(b"\n", pos + 1)
    return starts


def _gated_lines(data: bytes, starts: list[int]) -> list[int]:
    """Indices of the lines where some gate matches."""
    return sorted({index for finder in _line_finders() for index in _search_lines(finder, data, starts)})


def _search_lines(finder, data: bytes, starts: list[int]) -> list[int]:
    """Indices of the lines where `finder` matches: one search per such line (the next starts past it)."""
    found, position = [], 0
    while position < len(data) and (match := finder.search(data, position)) is not None:
        index = bisect.bisect_right(starts, match.start()) - 1
        found.append(index)
        position = starts[index + 1] if index + 1 < len(starts) else len(data)
    return found


@functools.cache
def _join_finder():
    """The joined-fields gate on UTF-8 bytes."""
    try:
        import re2
    except ImportError:
        return re.compile(_SPLIT_ANCHOR.encode())
    return re2.compile(_SPLIT_ANCHOR.encode())


@functools.cache
def _line_finders():
    """Each group of gates as one search pattern, to find the lines a gate matched on."""
    patterns = ["|".join(f"(?:{_GATE_PATTERNS[_GATE_INDEX[name]][1]})" for name in group).encode()
                for group in _GATE_GROUPS]  # UTF-8, as RE2 reads it
    try:
        import re2
    except ImportError:
        return tuple(re.compile(pattern) for pattern in patterns)
    options = re2.Options()
    options.max_mem = 64 << 20
    return tuple(re2.compile(pattern, options=options) for pattern in patterns)


def _scan(text: str, applying: set[str], json_documents: str | None, depth: int, trail: str, budget: _Budget):
    """Hits in each applying layer of `text`, with line numbers of `text`."""
    starts = raw = None
    used = set(trail.split("+"))

    def line_of(offset: int) -> tuple[int, int]:
        """Line and (byte) column of a byte offset in `raw`."""
        nonlocal starts
        starts = starts or _byte_line_starts(raw)
        index = bisect.bisect_right(starts, offset) - 1
        return index + 1, offset - starts[index] + 1

    def decoded(layer: str, plain: str, line: int, column: int):
        """`plain` (decoded from one run on `line`) scanned as is, and its own layers while depth allows."""
        budget.spend(len(plain))
        name = f"{trail}+{layer}" if trail else layer
        for hit in scan_text(plain):
            yield LayeredHit(SecretHit(hit.kind, line, column), name)
        if depth < MAX_DEPTH:
            inner = layers_that_apply(plain) - {"joined"}
            for deeper in _scan(plain, inner, None, depth + 1, name, budget):
                yield LayeredHit(SecretHit(deeper.hit.kind, line, column), deeper.layer)

    for layer, decode in (("base64", _from_base64), ("base32", _from_base32), ("hex", _from_hex), ("url", _from_url)):
        if layer not in applying:
            continue
        if raw is None:
            raw = _utf8(text)
        for match in _run_finder(layer).finditer(raw):
            run = match.group().decode("utf-8", errors="replace")
            if not budget.first_visit(layer, run, depth):
                continue
            budget.spend(len(run))
            plain = decode(run)
            if plain is not None:
                yield from decoded(layer, plain, *line_of(match.start()))
            elif layer != "url" and (plain := decode(run[::-1])) is not None:  # the encoding written backwards
                yield from decoded(f"reversed+{layer}", plain, *line_of(match.start()))
            elif layer in ("base64", "base32") and (plain := decode(_rot13(run))) is not None:  # then rot13'd
                yield from decoded(f"rot13+{layer}", plain, *line_of(match.start()))
    for layer, view_of in _VIEWS:
        if layer not in applying or (layer in _IDEMPOTENT and layer in used):
            continue
        budget.spend(len(text))
        view = view_of(text)
        if view != text and budget.first_visit("view", view, depth):
            keeps_json = json_documents if layer in _KEEPS_JSON else None
            yield from _whole(view, layer, trail, depth, keeps_json, budget)
    if "joined" in applying and json_documents is not None:
        yield from _joined_fields(text, json_documents, trail, budget)


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate
        return without_surrogates(text).encode()


def _from_html(text: str) -> str:
    return html.unescape(text)


def _from_escapes(text: str) -> str:
    def one(match: re.Match) -> str:
        code = int(next(group for group in match.groups() if group is not None), 16 if match.group(2) is None else 8)
        return chr(code) if code < 0x110000 and not 0xD800 <= code < 0xE000 else "\ufffd"

    return _ESCAPE.sub(one, text)


def _from_spaced(text: str) -> str:
    return _SPACED.sub(lambda match: match.group()[:: len(match.group(1)) + 1], text)


def _reversed_lines(text: str) -> str:
    return "\n".join(line[::-1] for line in text.split("\n"))


# Whole-line views, in this order. Those in _KEEPS_JSON leave JSON's structure alone (they only change
# or remove characters inside strings), so a joined-fields scan still reads the view as JSON.
_VIEWS = (
    ("html", _from_html),
    ("escapes", _from_escapes),
    ("spaced", _from_spaced),
    ("rot13", _rot13),
    ("homoglyph", _without_lookalikes),
    ("zero-width", _without_zero_width),  # removes characters only: lines keep their numbers
    ("reversed", _reversed_lines),
)
_KEEPS_JSON = frozenset({"rot13", "homoglyph", "zero-width"})


def _whole(view: str, layer: str, trail: str, depth: int, json_documents: str | None, budget: _Budget):
    """A view of the whole text that keeps its lines (stripped, reversed, ...): scanned, and its layers."""
    name = f"{trail}+{layer}" if trail else layer
    for hit in scan_text(view):
        yield LayeredHit(hit, name)
    if depth < MAX_DEPTH:
        yield from _scan(view, layers_that_apply(view), json_documents, depth + 1, name, budget)


# --- joined fields --------------------------------------------------------------------------------------


def string_fields(value) -> list[tuple[str, str]]:
    """(JSON pointer, string) for every string value of a decoded JSON document, in document order,
    without recursion (a document nested thousands deep is fine)."""
    found, stack = [], [("", value)]
    while stack:
        pointer, item = stack.pop()
        if isinstance(item, str):
            found.append((pointer or "/", item))
        elif isinstance(item, dict):
            stack.extend((f"{pointer}/{_escape_pointer(key)}", child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((f"{pointer}/{index}", child) for index, child in reversed(list(enumerate(item))))
    return found


def _escape_pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _joined_fields(text: str, json_documents: str, trail: str, budget: _Budget, data: bytes | None = None):
    """A string that ends in a cut-short credential joined with each of the strings after it (in the same
    document, then in the next row), scanned where the join spans the cut. Joining only after such a
    string keeps `"http://host:1"` + `"a@b"` from reading as one. With `data` (the file's bytes, for
    JSON Lines), rows are read from it and only those where the gate matches are parsed."""
    name = f"{trail}+joined fields" if trail else "joined fields"
    if data is not None:
        starts = _byte_line_starts(data)
        count = len(starts)
        candidates = _search_lines(_join_finder(), data, starts)

        def line_at(index: int) -> str:
            return _line_text(data, starts, index)
    else:
        lines = text.split("\n") if json_documents == "lines" else [text]
        count = len(lines)
        candidates = [index for index, line in enumerate(lines) if _join_gate().search(line)]

        def line_at(index: int) -> str:
            return lines[index]
    parsed: dict[int, list[tuple[str, str]] | None] = {}

    def fields(index: int):
        if index not in parsed:
            parsed[index] = None
            if index < count and (line := line_at(index)).strip():
                budget.spend(len(line))
                try:
                    parsed[index] = string_fields(json.loads(line))
                except (ValueError, RecursionError):
                    pass
        return parsed[index]

    for index in candidates:
        if not (own := fields(index)):
            continue
        following = (own, (fields(index + 1) or []) if json_documents == "lines" else [])
        for position, (pointer, value) in enumerate(own):
            if not _SPLIT_END.search(value[-JOIN_WINDOW:]):
                continue
            tail = value[-JOIN_WINDOW:]
            # The same field of the next row first (a prompt continued in the next case's prompt), then
            # the strings after this one, then the next row's others. A string cut inside a vendor prefix
            # (`"… s"`, `"A"`: lists of letters have thousands) is joined with the next few only.
            next_row = [(p, v, " of the next row") for p, v in following[1]]
            partners = [partner for partner in next_row if partner[0] == pointer]
            partners += [(p, v, "") for p, v in following[0][position + 1:]]
            partners += [partner for partner in next_row if partner[0] != pointer]
            cut_in_prefix = not _ANCHORED_END.search(tail)
            partners = partners[: JOIN_PREFIX_PARTNERS if cut_in_prefix else JOIN_PARTNERS]
            tail_kinds = {hit.kind for hit in scan_text(tail)}
            # kind -> (hit, partner): the last partner whose join still shows the key is the one it
            # continues in (joining from an earlier one only puts other strings in between).
            spans: dict[str, tuple[SecretHit, int]] = {}
            for start in range(len(partners)):
                rest = ""
                for _, piece, _ in partners[start:]:
                    rest += piece[: JOIN_WINDOW - len(rest)]
                    if len(rest) >= JOIN_WINDOW:
                        break
                window = tail + rest
                budget.spend(len(window))
                for hit in scan_text(window):
                    if hit.column - 1 < len(tail) and hit.kind not in tail_kinds:
                        spans[hit.kind] = (hit, start)
            for kind, (hit, start) in spans.items():
                other, _, where = partners[start]
                line = index + 1 if json_documents == "lines" else _line_of_field(text, value, hit.line)
                yield LayeredHit(SecretHit(kind, line, hit.column), name,
                                 f"fields {_safe_pointer(pointer)} and {_safe_pointer(other)}{where}")


def _line_of_field(text: str, value: str, fallback: int) -> int:
    """The line of a JSON document on which a string value is written (its JSON spelling), else `fallback`."""
    for spelling in (json.dumps(value, ensure_ascii=False), json.dumps(value)):
        at = text.find(spelling)
        if at != -1:
            return text.count("\n", 0, at) + 1
    return fallback


# --- naming the field -----------------------------------------------------------------------------------

_SAFE_SEGMENT = re.compile(r"[A-Za-z0-9_.-]{1,40}")
_STRING_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _safe_pointer(pointer: str) -> str:
    """A JSON pointer fit for a message: a segment that is not a plain short name, or that itself scans as a
    secret in any layer (a key *named* with the secret), is shown as `*`."""
    shown = []
    for segment in pointer.split("/")[1:]:
        plain = _SAFE_SEGMENT.fullmatch(segment) and not scan_text(segment) and not _layer_kinds(segment)
        shown.append(segment if plain else "*")
    return "/" + "/".join(shown)


def _layer_kinds(text: str) -> set[str]:
    # A JSON string holding `\u0073` was `\\u0073` in the file, which is what the escapes gate asks for.
    applying = (layers_that_apply(text) | ({"escapes"} if "\\u" in text else set())) - {"joined"}
    try:
        return {hit.hit.kind for hit in _scan(text, applying, None, 1, "", budget_for(len(text)))}
    except DecodeBudgetExceeded:
        return {"decode-budget"}


def field_of(data: bytes, line: int, kind: str, json_documents: str) -> str | None:
    """The JSON field (a pointer fit for a message) on `line` of `data` whose string shows a `kind` secret
    as written or in a decoded layer, or None (not JSON, or the secret spans fields or is in a key's name)."""
    hit = LayeredHit(SecretHit(kind, line, 1), "")
    return _with_fields(data, _byte_line_starts(data), [hit], json_documents)[0].field


def _with_fields(data: bytes, starts: list[int], hits: list[LayeredHit], json_documents: str) -> list[LayeredHit]:
    """Each hit with the JSON field its line's strings show it in (found again, string by string)."""
    document_fields = None
    named = []
    for number, hit in enumerate(hits):
        if hit.field is not None or hit.hit.kind == "decode-budget" or number >= MAX_NAMED_FIELDS:
            named.append(hit)
            continue
        line = _line_text(data, starts, hit.hit.line - 1) if hit.hit.line - 1 < len(starts) else ""
        try:
            if json_documents == "lines":
                candidates = string_fields(json.loads(line))
            else:
                if document_fields is None:
                    document_fields = string_fields(json.loads(data.decode("utf-8", errors="replace")))
                literals = set()
                for match in _STRING_LITERAL.finditer(line):
                    try:
                        literals.add(json.loads(match.group()))
                    except ValueError:
                        pass
                candidates = [(p, v) for p, v in document_fields if v in literals]
        except (ValueError, RecursionError):
            candidates = []
        field = next((pointer for pointer, value in candidates
                      if hit.hit.kind in {found.kind for found in scan_text(value)} | _layer_kinds(value)), None)
        named.append(LayeredHit(hit.hit, hit.layer, _safe_pointer(field) if field else None))
    return named


def _text_or_none(raw: bytes) -> str | None:
    """Decoded bytes as text when they are printable UTF-8 (a key is; a digest or random id is not)."""
    try:
        plain = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if plain.isprintable():
        return plain or None
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


def _from_base32(run: str) -> str | None:
    if len(run) > MAX_DECODED_RUN:
        return None
    body = run.rstrip("=")
    body = body[: len(body) - len(body) % 8 if len(body) % 8 in (1, 3, 6) else len(body)]
    try:
        raw = base64.b32decode(body + "=" * (-len(body) % 8), casefold=True)
    except (binascii.Error, ValueError):
        return None
    return _text_or_none(raw)
