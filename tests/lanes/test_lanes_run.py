"""The lanes end to end: `run_pack` over HTTP against the scripted endpoint, which keeps each stream on
its own script and (for the depth lane) charges a scripted prefill time per prompt token."""

from __future__ import annotations

import json
import re

import pytest

from benchpack.results.cache_state import CACHED, COLD
from benchpack.lanes import aggregate
from benchpack.packs.lane_filler import filler_sha256
from benchpack.lanes.runs import poisson_offsets
from benchpack.measurement.energy import EnergyMeter, Reading
from benchpack.packs.loader import load_pack
from benchpack.refserver.server import RefServer
from benchpack.results.resultdir import read_rows
from benchpack.run.runner import run_pack
from tests.run.test_runner_support import options, write_pack
from tests.environment import unavailable

pytestmark = pytest.mark.exclusive  # asserts streams are sent when due, within 20 ms

PROMPT = " ".join(f"word{i}" for i in range(40))
DEPTHS = [0, 200, 800]


def lane_pack(tmp_path, lanes: str, *, repetitions: int = 2, warmup: int = 0, cache: str = "cold"):
    root = write_pack(tmp_path / "pack", [f'id = "alpha"\nkind = "chat"\nprompt = "{PROMPT}"'], stream=True,
                      warmup=warmup, repetitions=repetitions, extra=lanes)
    text = (root / "benchpack.toml").read_text().replace("repetitions =", f'prompt_cache = "{cache}"\nrepetitions =', 1)
    (root / "benchpack.toml").write_text(text)
    return load_pack(root)


def depth_table(depths=DEPTHS, seed=5) -> str:
    return f'[lanes.depth]\ndepths = {depths}\nseed = {seed}\nfiller_sha256 = "{filler_sha256(seed, depths)}"\n'


@pytest.fixture(scope="module")
def server():
    with RefServer() as srv:
        yield srv


@pytest.fixture
def ref(server):
    server.reset()
    server.configure(ttft_s=0.0, itl_s=0.004, default_tokens=12, prompt_cache=True, responses=[],
                     prefill_s_per_token=0.0001, itl_s_per_context_token=0.000004, props=None)
    return server


def test_depth_lane_rows_rates_per_depth_and_its_error(tmp_path, ref):
    pack = lane_pack(tmp_path, depth_table())
    outcome = run_pack(pack, options(tmp_path, endpoint=ref.openai_url, lanes=("depth",)))
    assert outcome.complete and outcome.all_ok
    rows = read_rows(tmp_path / "out" / "run.jsonl")
    assert [r["depth_tokens"] for r in rows] == [0, 0, 200, 200, 800, 800]
    assert all("concurrency" not in r and "arrival_rate" not in r for r in rows)
    # The filler is about one token per word (the scripted server counts words): depth + the case prompt.
    for row in rows:
        assert row["tokens"]["prompt"] - row["depth_tokens"] in range(40, 40 + 20)
        assert row["raw"]["request_path"].startswith(f"raw/alpha.depth-{row['depth_tokens']}.rep-")
    curve = aggregate.depth_curves(rows)["alpha"]
    assert [p["depth_tokens"] for p in curve] == DEPTHS and all(p["cache_state"] == COLD for p in curve)
    for point in curve:
        # Scripted: 10,000 tok/s prefill, decode 4 ms + 4 µs per context token between tokens.
        # The client's TTFT also holds the upload and the server's reading of the request, so its
        # prefill rate is a little lower; that share shrinks as the prompt grows.
        assert point["server_prefill_tps"] == pytest.approx(10_000, rel=0.01)
        assert point["prefill_tps"] <= point["server_prefill_tps"] * 1.01
        if point["depth_tokens"] >= 200:  # loose: a loaded machine delays the server's read of the request
            assert point["prefill_tps"] == pytest.approx(10_000, rel=0.5)
    # Each row's TPOT against the spacing the server really kept (its log), paired by the row's nonce.
    log = {re.search(r"\[nonce (\d{20})\]", r["body"]["messages"][0]["content"]).group(1): r
           for r in ref.log() if r.get("body", {}).get("messages")}
    on_script = 0
    for row in rows:
        record = log[f"{int(row['prompt_cache']['nonce'], 16):020d}"]
        sent = record["content_times"]
        truth = (sent[-1] - sent[0]) / (len(sent) - 1)
        # The client's TTFT is the server's (its read of the request to its first content write) plus the trip.
        # A first read that held several chunks places the first one by the stream's spacing before that read
        # (adapters/base.py); a server that fell behind its script sent those chunks closer than it spaces
        # them, so the placement may come early by as much as the server was late, and never by more.
        late = max(out - planned for out, planned in zip(sent, record["content_planned"]))
        assert -late <= row["timing"]["ttft_s"] - (sent[0] - record["received_at"]) < 0.02
        # A server that fell behind its script on a saturated machine sends the late tokens in a burst,
        # which the client rightly reads as one chunk; compare where the server kept its script.
        if late < 0.001:
            on_script += 1
            # 11 gaps per reply: a late stamp on a loaded machine moves it by several %; bench/lanes.py has the figures.
            assert row["timing"]["tpot_s"] == pytest.approx(truth, rel=0.15)
    assert on_script >= 1
    # Decode slows with depth, as scripted (4.2 ms at depth 0, 7.4 ms at 800).
    assert curve[0]["tpot_s"] < curve[2]["tpot_s"]
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "## Depth lane" in summary and "| alpha | 800 |" in summary


def test_a_depth_served_from_the_prompt_cache_is_cached_never_mixed_with_cold(tmp_path, ref):
    # server-default: the same filler twice in a row is served from the (simulated) cache the second time.
    pack = lane_pack(tmp_path, depth_table(), cache="server-default")
    run_pack(pack, options(tmp_path, endpoint=ref.openai_url, lanes=("depth",)))
    rows = read_rows(tmp_path / "out" / "run.jsonl")
    curve = aggregate.depth_curves(rows)["alpha"]
    deep = [p for p in curve if p["depth_tokens"] == 800][0]
    assert deep["cache_state"] == CACHED and deep["prefill_tps"] is None
    assert "cached /" in (tmp_path / "out" / "summary.md").read_text()
    # Each depth is its own group: compare's label keeps it apart from the base rows and other depths.
    assert {aggregate.group_label(r) for r in rows} == {"alpha @depth=0", "alpha @depth=200", "alpha @depth=800"}


def test_depths_beyond_the_server_context_or_max_depth_are_skipped_with_a_warning(tmp_path, ref):
    ref.configure(props={"default_generation_settings": {"n_ctx": 512}, "total_slots": 1, "build_info": "b1"})
    pack = lane_pack(tmp_path, depth_table(), repetitions=1)
    outcome = run_pack(pack, options(tmp_path, endpoint=ref.openai_url, lanes=("depth",), probe_server=True,
                                     max_depth=100))
    assert [r["depth_tokens"] for r in outcome.rows] == [0]
    assert outcome.complete and outcome.planned_rows == 1
    assert "depth 200 skipped: above --max-depth 100" in outcome.warnings
    assert ("depth 800 skipped: with max_tokens 16 it does not fit the server's context of 512 tokens per slot"
            in outcome.warnings)
    metadata = json.loads((tmp_path / "out" / "run-metadata.json").read_text())
    assert "depth 200 skipped: above --max-depth 100" in metadata["warnings"]


def test_concurrency_lane_levels_aggregates_and_goodput(tmp_path, ref):
    # Half the streams answer in 10 ms, half in 300 ms: an SLO of 100 ms gives goodput 0.5.
    ref.configure(prefill_s_per_token=0.0, itl_s_per_context_token=0.0,
                  responses=[{"tokens": 10, "ttft_s": 0.01, "itl_s": 0.005}, {"tokens": 10, "ttft_s": 0.3, "itl_s": 0.005}])
    pack = lane_pack(tmp_path, "[lanes.concurrency]\nlevels = [1, 4]\nrequests = 8\n[lanes.slo]\nttft_s = 0.1\ntpot_s = 0.05\n")
    outcome = run_pack(pack, options(tmp_path, endpoint=ref.openai_url, lanes=("concurrency",)))
    assert outcome.complete and outcome.all_ok and len(outcome.rows) == 16
    rows = read_rows(tmp_path / "out" / "run.jsonl")
    assert sorted({r["concurrency"] for r in rows}) == [1, 4]
    assert all(r["load"]["done_offset_s"] > r["load"]["sent_offset_s"] >= 0 for r in rows)
    metadata = json.loads((tmp_path / "out" / "run-metadata.json").read_text())
    levels = metadata["lanes"]["levels"]
    one, four = aggregate.level_aggregates(rows, pack.lanes.slo, levels)
    assert (one["level"], four["level"]) == (1, 4)
    assert one["goodput"] == pytest.approx(0.5) and four["goodput"] == pytest.approx(0.5)
    # Four streams at once finish the same 8 requests much faster than one at a time.
    assert four["duration_s"] < one["duration_s"] * 0.5
    assert four["output_tps"] > one["output_tps"] * 2
    assert one["output_tokens"] == 80 and one["requests_per_s"] == pytest.approx(8 / one["duration_s"], rel=1e-3)
    assert one["energy"]["joules"] is None and one["energy"]["null_reason"]
    # At most 4 in flight at once at level 4, and at some point all 4.
    events = sorted([(r["load"]["sent_offset_s"], 1) for r in rows if r["concurrency"] == 4]
                    + [(r["load"]["done_offset_s"], -1) for r in rows if r["concurrency"] == 4])
    in_flight, peak = 0, 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    assert peak == 4
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| concurrency | 4 streams | 8 (8) |" in summary and "50 %" in summary


def test_rate_lane_sends_at_seeded_poisson_times(tmp_path, ref):
    ref.configure(prefill_s_per_token=0.0, itl_s_per_context_token=0.0, responses=[{"tokens": 5, "ttft_s": 0.01, "itl_s": 0.002}])
    pack = lane_pack(tmp_path, "[lanes.rate]\nrates = [25]\nrequests = 12\nseed = 4\n")
    outcome = run_pack(pack, options(tmp_path, endpoint=ref.openai_url, lanes=("rate",)))
    assert outcome.complete and outcome.all_ok
    rows = sorted(read_rows(tmp_path / "out" / "run.jsonl"), key=lambda r: r["repetition"])
    assert all(r["arrival_rate"] == 25.0 and "concurrency" not in r for r in rows)
    planned = poisson_offsets(25.0, 12, 4)
    assert [r["load"]["scheduled_offset_s"] for r in rows] == planned
    assert planned == poisson_offsets(25.0, 12, 4) and planned != poisson_offsets(25.0, 12, 5)
    late = [row["load"]["sent_offset_s"] - row["load"]["scheduled_offset_s"] for row in rows]
    assert min(late) >= 0 and sorted(late)[len(late) // 2] < 0.02  # sent when due, give or take a busy machine
    (agg,) = aggregate.level_aggregates(rows)
    assert agg["lane"] == "rate" and agg["goodput"] is None and agg["send_late_max_s"] == pytest.approx(max(late), abs=1e-5)


def test_poisson_gaps_have_the_declared_mean():
    offsets = poisson_offsets(4.0, 4001, 1)
    assert offsets[0] == 0 and offsets[-1] / 4000 == pytest.approx(0.25, rel=0.05)


class FakeSource:
    """Counts 2 J per call to end() — a counter read at start and stop."""

    def begin(self):
        return None

    def end(self, began, window_s):
        return [Reading("rapl", "package-0", 2.0, "counter", 0.001)]

    def close(self):
        pass


def test_energy_per_request_and_per_level(tmp_path, ref):
    ref.configure(prefill_s_per_token=0.0, itl_s_per_context_token=0.0, responses=[{"tokens": 8, "ttft_s": 0.01, "itl_s": 0.002}])
    pack = lane_pack(tmp_path, "[lanes.concurrency]\nlevels = [2]\nrequests = 4\n", repetitions=2)
    meter = EnergyMeter([FakeSource()], [{"source": "nvml", "reason": "not installed"}])
    run_pack(pack, options(tmp_path, endpoint=ref.openai_url, lanes=None), energy_meter=meter)
    rows = read_rows(tmp_path / "out" / "run.jsonl")
    base = [r for r in rows if "concurrency" not in r]
    assert [r["energy"]["joules"] for r in base] == [2.0, 2.0]
    assert base[0]["energy"]["readings"][0]["interval_s"] == 0.001
    assert all("energy" not in r for r in rows if "concurrency" in r)  # overlapping: measured per level
    energy = aggregate.energy_summary(rows)
    assert energy["joules_per_request"] == 2.0 and energy["tokens_per_joule"] == pytest.approx(4.0)
    assert energy["sources"] == [{"source": "rapl", "interval_s": 0.001}]
    levels = json.loads((tmp_path / "out" / "run-metadata.json").read_text())["lanes"]["levels"]
    (agg,) = aggregate.level_aggregates(rows, None, levels)
    assert agg["energy"]["joules"] == 2.0 and agg["energy"]["joules_per_request"] == 0.5
    assert agg["energy"]["tokens_per_joule"] == pytest.approx(16.0)
    assert "joules per request (median): 2.000" in (tmp_path / "out" / "summary.md").read_text()


def test_cli_lanes_option_selects_and_rejects(tmp_path, ref, capsys):
    from benchpack import cli

    ref.configure(prefill_s_per_token=0.0, itl_s_per_context_token=0.0)
    lane_pack(tmp_path, "[lanes.concurrency]\nlevels = [2]\nrequests = 2\n" + depth_table([0, 64]), repetitions=1)
    code = cli.main(["run", str(tmp_path / "pack"), "--adapter", "openai-chat", "--model", "m", "--endpoint",
                     ref.openai_url, "--out", str(tmp_path / "out"), "--lanes", "depth,concurrency", "--max-depth", "0"])
    assert code == 0
    rows = read_rows(tmp_path / "out" / "run.jsonl")
    assert sorted((r.get("depth_tokens", -1), r.get("concurrency", -1)) for r in rows) == [(-1, 2), (-1, 2), (0, -1)]
    code = cli.main(["run", str(tmp_path / "pack"), "--adapter", "openai-chat", "--model", "m", "--endpoint",
                     ref.openai_url, "--out", str(tmp_path / "out2"), "--lanes", "depth,width"])
    assert code == 2
    assert "--lanes: must be a comma-separated list of base, depth, concurrency, rate, got 'depth,width'" in capsys.readouterr().err
    assert not (tmp_path / "out2").exists()


def test_a_lane_run_bundles_validates_and_keeps_its_lane_fields(tmp_path, ref):
    from benchpack.bundles.create import create_bundle, validate_bundle

    ref.configure(prefill_s_per_token=0.00005, itl_s_per_context_token=0.0)
    pack = lane_pack(tmp_path, depth_table([0, 64]) + "[lanes.concurrency]\nlevels = [2]\nrequests = 2\n"
                     "[lanes.slo]\nttft_s = 1\n", repetitions=1)
    run_pack(pack, options(tmp_path, endpoint=ref.openai_url, lanes=None))
    bundle = create_bundle([tmp_path / "out"], tmp_path / "bundle", "self-reported")
    report = validate_bundle(bundle)
    assert report.ok, report.to_dict()
    rows = read_rows(bundle / "runs" / "out" / "run.jsonl") if (bundle / "runs" / "out").exists() else None
    if rows is None:
        (run_file,) = list(bundle.rglob("run.jsonl"))
        rows = read_rows(run_file)
    assert sorted(r["depth_tokens"] for r in rows if "depth_tokens" in r) == [0, 64]
    assert [r["concurrency"] for r in rows if "concurrency" in r] == [2, 2]
    (metadata,) = list(bundle.rglob("run-metadata.json"))
    assert json.loads(metadata.read_text())["lanes"]["slo"] == {"ttft_s": 1.0, "tpot_s": None}


def test_every_planned_execution_runs_warmups_included(tmp_path, ref):
    from benchpack.lanes.runs import lane_plan

    ref.configure(prefill_s_per_token=0.0, itl_s_per_context_token=0.0, responses=[{"tokens": 3, "ttft_s": 0.005, "itl_s": 0.001}])
    pack = lane_pack(tmp_path, depth_table([0, 32]) + "[lanes.concurrency]\nlevels = [1, 3]\nrequests = 3\n"
                     "[lanes.rate]\nrates = [50, 100]\nrequests = 2\n", repetitions=2, warmup=1)
    started = []

    class Counting:
        def started(self, total):
            started.append(total)

        def execution_started(self, *args, **lane):
            pass

        def execution_finished(self, *args, **lane):
            pass

        def finished(self):
            pass

    opts = options(tmp_path, endpoint=ref.openai_url, lanes=None)
    outcome = run_pack(pack, opts, Counting())
    plan = lane_plan(pack, opts)
    # base 1×(1+2) + depth 2×(1+2) + concurrency (1+3 warm-ups, 2×3) + rate (2 warm-ups, 2×2)
    assert started == [3 + 6 + 10 + 6] and plan.rows == 4 + 6 + 4
    assert outcome.complete and len(outcome.rows) == outcome.planned_rows == 2 + 4 + 6 + 4
    assert len(list((tmp_path / "out" / "raw").glob("*.request.json"))) == started[0]


def test_the_api_runs_the_base_cases_unless_asked_for_lanes(tmp_path, ref):
    ref.configure(prefill_s_per_token=0.0, itl_s_per_context_token=0.0)
    pack = lane_pack(tmp_path, "[lanes.concurrency]\nlevels = [2]\nrequests = 2\n", repetitions=1)
    outcome = run_pack(pack, options(tmp_path, endpoint=ref.openai_url))
    assert [r["case"] for r in outcome.rows] == ["alpha"] and "concurrency" not in outcome.rows[0]


def test_the_cli_names_the_lane_in_progress_counts_each_step_on_its_own_and_warns_once(tmp_path, ref, capsys):
    """Issue 18: `rep 16/3` and `warmup 8/1` without a lane; the warnings printed twice."""
    from benchpack import cli

    ref.configure(props={"default_generation_settings": {"n_ctx": 512}, "total_slots": 1, "build_info": "b1"})
    pack = lane_pack(tmp_path, depth_table() + "[lanes.concurrency]\nlevels = [4]\nrequests = 6\n",
                     repetitions=2, warmup=1)
    code = cli.main(["run", str(pack.root), "--adapter", "openai-chat", "--model", "m", "--endpoint", ref.openai_url,
                     "--out", str(tmp_path / "out"), "--max-depth", "100"])
    out, err = capsys.readouterr()
    assert code == 0, err
    labels = re.findall(r"^\[\d+/\d+\] (.+?) (?:ok|failed|done)\b", out, re.M)
    assert "alpha rep 2/2" in labels and "alpha warmup 1/1" in labels  # the base cases
    assert "alpha · depth 0 rep 2/2" in labels and "alpha · depth 0 warmup 1/1" in labels
    assert "alpha · concurrency 4 warmup 4/4" in labels
    assert [label for label in labels if "concurrency" in label and "warmup" not in label] == [
        f"alpha · concurrency 4 request {n}/6" for n in range(1, 7)]
    for label in labels:  # never a count beyond its total
        done, total = map(int, label.rsplit(" ", 1)[1].split("/"))
        assert 1 <= done <= total, label
    both = out + err
    assert both.count("depth 200 skipped: above --max-depth 100") == 1
    assert both.count("depth 800 skipped: with max_tokens 16 it does not fit the server's context") == 1


def test_a_levels_bodies_are_read_by_one_shared_thread_after_each_workers_first_reads(tmp_path, ref, monkeypatch):
    import socket
    import threading

    from benchpack.adapters.chunked import WATCHED_READS

    readers: list[str] = []
    real = socket.socket.recvmsg

    def recording(self, *args):
        if len(args) < 3 or not args[2] & socket.MSG_ERRQUEUE:  # not the transmit stamps' queue
            readers.append(threading.current_thread().name)
        return real(self, *args)

    monkeypatch.setattr(socket.socket, "recvmsg", recording)
    ref.configure(prefill_s_per_token=0.0, itl_s_per_context_token=0.0,
                  responses=[{"tokens": 12, "ttft_s": 0.01, "itl_s": 0.005}])
    pack = lane_pack(tmp_path, "[lanes.concurrency]\nlevels = [4]\nrequests = 8\n", repetitions=2)
    outcome = run_pack(pack, options(tmp_path, endpoint=ref.openai_url, lanes=("base", "concurrency")))
    assert outcome.complete and outcome.all_ok and len(outcome.rows) == 10
    from benchpack.adapters import rxstamp

    if not rxstamp.SUPPORTED:
        unavailable("no kernel receive stamps on this system: reads use recv(), not recvmsg()")
    # The base lane's single stream reads its own body; a level's workers read each response's head and
    # first WATCHED_READS reads, and the level's one reader the rest.
    assert readers.count("MainThread") >= 2 * 12 // 2
    lane_reads = [name for name in readers if name.startswith("benchpack-lane-")]
    assert len(lane_reads) <= 8 * (1 + WATCHED_READS) and readers.count("benchpack-stream-reader") >= 8 * 3
    # Each row's TPOT against the spacing the server really kept (its log, paired by the row's nonce): a
    # server behind its 5 ms script on a loaded machine sends late tokens in a burst, and the row rightly
    # reads the shorter spacing (seen: 3.0 ms while other tests loaded the machine).
    log = {re.search(r"\[nonce (\d{20})\]", r["body"]["messages"][0]["content"]).group(1): r
           for r in ref.log() if r.get("body", {}).get("messages")}
    for row in outcome.rows:
        sent = log[f"{int(row['prompt_cache']['nonce'], 16):020d}"]["content_times"]
        assert row["timing"]["tpot_s"] == pytest.approx((sent[-1] - sent[0]) / (len(sent) - 1), rel=0.3)


def assert_decode_figures(rows: list[dict]) -> None:
    """Every row has its decode figure, or says its reads could not place one (`placement.tpot: "one_read"`,
    issue 34 item 1): on a loaded machine (load 9-11) the reader woke once for a whole 4- or 12-token reply,
    which is the machine's doing, not a reader shared across runs. A shared reader's fault was a row with
    neither (or an error, checked by all_ok). Most rows must still have the figure: a reader that never saw
    spacing would mark them all."""
    placed = 0
    for row in rows:
        timing = row["timing"]
        if (timing.get("placement") or {}).get("tpot") == "one_read":
            assert timing["tpot_s"] is None and timing["decode_tps"] is None, row["raw"]["request_path"]
        else:
            assert timing["tpot_s"] and timing["decode_tps"], row["raw"]["request_path"]
            placed += 1
    assert placed > len(rows) / 2, f"{placed} of {len(rows)} rows have a decode figure"


def test_two_runs_in_one_process_keep_their_own_stream_readers(tmp_path, ref):
    # The registry's demo seeds six runs at once, each in a thread of one process. Here a long run (two
    # concurrency levels of 160 ms streams) and, while it runs, short runs one after the other (a base case,
    # then four levels of 30 ms streams): their levels open and close while the long run's streams are
    # mid-body. Every row of both gets its decode figure. With one process-wide reader (the newest level's,
    # restored to the one before when a level ended) the long run's requests sent while a short level was
    # open were read by that level's reader and failed when it closed ('the shared stream reader stopped'),
    # and a request after the levels had ended out of order found a closed reader ('... is closed').
    import threading

    ref.configure(prefill_s_per_token=0.0, itl_s_per_context_token=0.0,
                  responses=[{"tokens": 16, "ttft_s": 0.01, "itl_s": 0.01}])
    with RefServer(prefill_s_per_token=0.0, itl_s_per_context_token=0.0,
                   responses=[{"tokens": 4, "ttft_s": 0.01, "itl_s": 0.005}]) as short_server:
        long_pack = lane_pack(tmp_path / "long", "[lanes.concurrency]\nlevels = [2, 3]\nrequests = 9\n")
        short_pack = lane_pack(tmp_path / "short", "[lanes.concurrency]\nlevels = [1, 2, 3, 4]\nrequests = 4\n",
                               repetitions=1)
        outcomes: dict = {}

        def long_run() -> None:
            outcomes["long"] = run_pack(long_pack, options(tmp_path / "long", endpoint=ref.openai_url,
                                                           lanes=("concurrency",)))

        thread = threading.Thread(target=long_run, name="long-run")
        thread.start()
        short = []
        for number in range(8):  # bounded: as many short runs as fit in the long one, at least one
            out = tmp_path / f"short-{number}"
            short.append(run_pack(short_pack, options(out, endpoint=short_server.openai_url,
                                                      lanes=("base", "concurrency"))))
            if not thread.is_alive():
                break
        thread.join(60)
    outcome = outcomes["long"]
    assert outcome.complete and outcome.all_ok, [r.get("error") for r in outcome.rows if r.get("error")]
    assert len(outcome.rows) == 18
    for run in short:
        assert run.complete and run.all_ok, [r.get("error") for r in run.rows if r.get("error")]
        assert len(run.rows) == 1 + 4 * 4
    assert_decode_figures(outcome.rows + [row for run in short for row in run.rows])
    assert len(short) >= 2


def test_six_runs_at_once_as_the_demo_seeds_them_all_keep_their_decode_figures(tmp_path, ref):
    # The registry's demo shape: six runs in a thread pool of one process, each with its base case, four
    # concurrency levels and a rate, so levels of different runs open and close over each other's streams
    # and base requests run while other runs' levels are open. With h37f's process-wide reader every run
    # here lost rows ('the shared stream reader is closed').
    from concurrent.futures import ThreadPoolExecutor

    ref.configure(prefill_s_per_token=0.0, itl_s_per_context_token=0.0, itl_s=0.008, ttft_s=0.0,
                  default_tokens=12, responses=[])
    lanes = ("[lanes.concurrency]\nlevels = [1, 2, 4, 8]\nrequests = 8\n"
             "[lanes.rate]\nrates = [20]\nrequests = 8\nseed = 3\n")

    def one(number: int):
        where = tmp_path / f"run-{number}"
        return run_pack(lane_pack(where, lanes, repetitions=3),
                        options(where, endpoint=ref.openai_url, lanes=("base", "concurrency", "rate")))

    with ThreadPoolExecutor(6, thread_name_prefix="demo-seed") as pool:
        outcomes = list(pool.map(one, range(6)))
    for outcome in outcomes:
        assert outcome.complete and outcome.all_ok, [r.get("error") for r in outcome.rows if r.get("error")][:3]
        assert len(outcome.rows) == 3 + 4 * 8 + 8
    assert_decode_figures([row for outcome in outcomes for row in outcome.rows])
