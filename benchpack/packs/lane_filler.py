"""Filler context for the depth lane: deterministic, about one token per word, pinned by hash.

A depth of N tokens is N words drawn from a fixed list of short, common
English words (each one token with its leading space on current BPE
vocabularies: Llama, Mistral, Qwen, SmolLM, GPT-4-style), seeded by the
pack's seed *and the depth*, so two depths never share a prefix: a deeper
request cannot reuse a shallower one's filler from a server's prompt cache.
The server's own prompt-token count (the row's `tokens.prompt`) says how
many tokens the words really were; docs/lanes.md has the measured ratio.

`filler_sha256(seed, depths)` is what a pack pins: the hash of every
depth's filler, so a change to this module or to the word list can never
silently change what a pack sends (packs.py refuses the mismatch).
"""

from __future__ import annotations

import random

from benchpack.digest import sha256

FILLER_VERSION = 1
WORDS = tuple(dict.fromkeys("""
the of and to in is was for on that with as by at from his her it an were are which be this had not or have one
their all but they new more first two been other time also its can after who has there some when into only over
most years made many would out may up between during where such three about than under later these then him
state city both world school called part people year used known team well before high since each day work
season long war life became early home water number four music film book game land south north west east
left right small large local found while well back group family place end still around light open road
name king house river line over top old same point head side hand power body line cause fact car door
week month plan case form field level rate short note page rule sign step test tree wall word yard zone
""".split()))  # order kept, repeats dropped
HEADER = "Background notes (filler context; the task follows after them):\n"
FOOTER = "\n\n"
WORDS_PER_LINE = 16


def filler_text(seed: int, depth: int) -> str:
    """The filler put before the case prompt at `depth` tokens ("" at depth 0)."""
    if depth <= 0:
        return ""
    rng = random.Random(f"benchpack-filler-v{FILLER_VERSION}:{seed}:{depth}")
    words = [rng.choice(WORDS) for _ in range(depth)]
    lines = (" ".join(words[i:i + WORDS_PER_LINE]) for i in range(0, depth, WORDS_PER_LINE))
    return HEADER + "\n".join(lines) + FOOTER


def filler_sha256(seed: int, depths: tuple[int, ...] | list[int]) -> str:
    """`sha256:<hex>` over every depth's filler, in the order declared."""
    digest = sha256()
    for depth in depths:
        digest.update(f"{depth}\n".encode())
        digest.update(filler_text(seed, depth).encode())
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()
