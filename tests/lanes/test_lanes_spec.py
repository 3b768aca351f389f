"""The `[lanes]` table: what a pack may declare, and one error per problem with file + field + reason."""

from __future__ import annotations

import pytest

from benchpack.errors import PackError
from benchpack.packs.lane_filler import WORDS, filler_sha256, filler_text
from benchpack.packs.loader import load_pack
from tests.run.test_runner_support import chat_case, write_pack


def lanes_pack(tmp_path, lanes: str, *, stream: bool = True, cases=None):
    cases = cases or [chat_case("alpha"), chat_case("beta")]
    return write_pack(tmp_path / "pack", cases, stream=stream, extra=lanes)


def problems(tmp_path, lanes: str, **kwargs) -> list[str]:
    with pytest.raises(PackError) as caught:
        load_pack(lanes_pack(tmp_path, lanes, **kwargs))
    return [f"{p.field}: {p.reason}" for p in caught.value.problems]


def test_filler_is_deterministic_one_word_per_token_and_depths_share_no_prefix():
    assert filler_text(3, 0) == ""
    a, b = filler_text(3, 512), filler_text(3, 512)
    assert a == b
    body = a.split("\n", 1)[1]
    assert len(body.split()) == 512 and set(body.split()) <= set(WORDS)
    deeper = filler_text(3, 1024).split("\n", 1)[1].split()
    assert deeper[:16] != body.split()[:16]  # a deeper depth cannot reuse a shallower one's cached prefix
    assert filler_text(4, 512) != a
    assert filler_sha256(3, [0, 512]) != filler_sha256(3, [0, 1024])


def test_a_full_lanes_table_loads(tmp_path):
    pack = load_pack(lanes_pack(tmp_path, f"""
        [lanes.depth]
        depths = [0, 128]
        seed = 3
        filler_sha256 = "{filler_sha256(3, [0, 128])}"
        cases = ["alpha"]
        [lanes.concurrency]
        levels = [1, 2, 4]
        requests = 8
        [lanes.rate]
        rates = [0.5, 2]
        requests = 6
        seed = 9
        [lanes.slo]
        ttft_s = 2
        tpot_s = 0.1
    """))
    lanes = pack.lanes
    assert lanes.depth.depths == (0, 128) and lanes.depth.cases == ("alpha",)
    assert lanes.concurrency.levels == (1, 2, 4) and lanes.concurrency.requests == 8
    assert lanes.rate.rates == (0.5, 2.0) and lanes.rate.seed == 9
    assert lanes.slo.ttft_s == 2.0 and lanes.slo.tpot_s == 0.1
    assert lanes.declared() == ("depth", "concurrency", "rate")


def test_a_pack_without_lanes_has_none(tmp_path):
    assert load_pack(lanes_pack(tmp_path, "")).lanes.declared() == ()


def test_the_filler_hash_is_required_and_checked(tmp_path):
    found = problems(tmp_path, "[lanes.depth]\ndepths = [0, 64]\n")
    expected = filler_sha256(0, [0, 64])
    assert found == [f"lanes.depth.filler_sha256: is required: it pins the filler these depths and seed make; "
                     f"set it to {expected!r}"]
    found = problems(tmp_path, f'[lanes.depth]\ndepths = [0, 64]\nseed = 1\nfiller_sha256 = "{expected}"\n')
    assert len(found) == 1 and found[0].startswith("lanes.depth.filler_sha256: does not match the filler")


def test_bad_lane_values_each_get_their_own_error(tmp_path):
    found = problems(tmp_path, """
        [lanes.depth]
        depths = [0, -1]
        filler_sha256 = "sha256:00"
        [lanes.concurrency]
        levels = [1, 8]
        requests = 4
        cases = ["nope"]
        colour = "red"
        [lanes.rate]
        rates = [0]
        requests = 0
        [lanes.slo]
        ttft_s = -2
    """)
    assert "lanes.depth.depths: every entry must be an integer from 0 to 1048576, got -1" in found
    assert ("lanes.concurrency.requests: must be at least the highest level (8), or that level never has all its "
            "streams in flight; got 4") in found
    assert "lanes.concurrency.cases: no case 'nope' in this pack" in found
    assert any(f.startswith("lanes.concurrency.colour: unknown key") for f in found)
    assert "lanes.rate.rates: every entry must be a number > 0 and <= 1000 (requests/s)" in found
    assert "lanes.rate.requests: must be an integer from 1 to 10000, got 0" in found
    assert "lanes.slo.ttft_s: must be a number of seconds > 0, got -2" in found


def test_lanes_need_a_streamed_reply_and_slo_needs_a_load_lane(tmp_path):
    found = problems(tmp_path, "[lanes.slo]\nttft_s = 1\n", stream=False)
    assert "lanes.slo: applies to the concurrency and rate lanes; declare one of them" in found
    found = problems(tmp_path, "[lanes.concurrency]\nlevels = [1]\nrequests = 2\n", stream=False)
    assert found == ["defaults.stream: must be true when the pack declares lanes: TTFT and TPOT need a streamed reply"]


def test_the_error_names_the_manifest(tmp_path):
    with pytest.raises(PackError) as caught:
        load_pack(lanes_pack(tmp_path, "[lanes.rate]\nrates = [1]\nrequests = 2\ncases = 3\n"))
    problem = caught.value.problems[0]
    assert (problem.file, problem.field) == ("benchpack.toml", "lanes.rate.cases")
