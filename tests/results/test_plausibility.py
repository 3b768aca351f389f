"""Plausibility bounds against published numbers people trust, and fabricated rows they must refuse.

Published figures (llama.cpp's own benchmark threads, `llama-bench` output):
each sits under its bound. Fabricated rows: each is refused with the factor named.
"""

from __future__ import annotations

import pytest

from benchpack.results import chips
from benchpack.results.plausibility import (IMPLAUSIBLE, PLAUSIBLE, UNCHECKED, model_size, platform, run_row_verdicts,
                                            run_verdict)

GIB = 2**30


def _row(decode: float | None = None, prefill: float | None = None, prompt: int = 512, ok: bool = True) -> dict:
    timing: dict = {"wall_s": 1.0}
    if decode is not None:
        timing["tpot_s"] = 1 / decode
    if prefill is not None:
        timing["ttft_s"] = prompt / prefill
    return {"ok": ok, "model": "m", "timing": timing, "tokens": {"prompt": prompt, "output": 128}}


def _meta(params: float | None = None, size: float | None = None, name: str = "model.gguf", **model) -> dict:
    """Run metadata whose model size is what the server reported (`benchpack.server_reported`)."""
    server: dict = {"size_source": "llama-server /v1/models meta"}
    if params:
        server["params"] = params
    if size:
        server["size_bytes"] = size
    if "file" in model:  # the model file the server loaded (llama-server /props model_path)
        server["file"] = model["file"]
    return {"model": {"served": name, **model},
            "benchpack": {"server_reported": {"model": server, "config": {}}}}


APPLE = lambda chip: {"chip": f"Apple {chip}", "cpu_model": f"Apple {chip}", "cpu_count": 12, "gpus": []}  # noqa: E731
GPU = lambda name: {"cpu_model": "AMD Ryzen 9 7950X 16-Core Processor", "cpu_count": 32,  # noqa: E731
                    "gpus": [{"vendor": "nvidia", "model": name}]}
CPU = lambda name, n=8: {"cpu_model": name, "cpu_count": n, "gpus": []}  # noqa: E731

# (source, hardware, params, size bytes, decode tok/s, prefill tok/s)
PUBLISHED = [
    # geerlingguy/ai-benchmarks#48, llama-bench on an M1 Ultra (64-core GPU): TinyLlama 1.1B Q4_K_M 636.18 MiB
    ("M1 Ultra tinyllama", APPLE("M1 Ultra"), 1.10e9, 636.18 * 2**20, 242.56, 5587.84),
    # brand-o/normiebench#40: MacBook Pro M1 Max, llama 3.1 8B Q4_K_M (4.58 GiB), pp512 499.58, tg128 46.2
    ("M1 Max llama 8B", APPLE("M1 Max"), 8.03e9, 4.58 * GIB, 46.2, 499.58),
    # ggml-org/llama.cpp#10444 (ggerganov, M2 Ultra): llama 3B Q4_0 1.78 GiB, tg32 68.61 (throttled run)
    ("M2 Ultra llama 3B", APPLE("M2 Ultra"), 3.21e9, 1.78 * GIB, 68.61, None),
    # ggml-org/llama.cpp#12183: RTX 4090, llama 3B Q4_K_M (1.87 GiB), 269.8 tok/s generation
    ("RTX 4090 llama 3B", GPU("NVIDIA GeForce RTX 4090"), 3.21e9, 1.87 * GIB, 269.8, None),
    # same thread: GTX 1080, llama 3B Q4_K_M, 64.4 tok/s
    ("GTX 1080 llama 3B", GPU("NVIDIA GeForce GTX 1080"), 3.21e9, 1.87 * GIB, 64.4, None),
    # ggml-org/llama.cpp#7676: RTX 4090, llama 8B Q4_0 (4.33 GiB) pp512 with int8 tensor-core MMQ: 10358.75
    ("RTX 4090 llama 8B pp", GPU("NVIDIA GeForce RTX 4090"), 8.03e9, 4.33 * GIB, None, 10358.75),
    # ggml-org/llama.cpp#34 (slaren): i9-13900K, DDR5-6400, 7B Q4_0 (3.56 GiB), tg 18.27, pp512 55.21
    ("13900K llama 7B", CPU("13th Gen Intel(R) Core(TM) i9-13900K", 32), 6.74e9, 3.56 * GIB, 18.27, 55.21),
]


@pytest.mark.parametrize("label,hardware,params,size,decode,prefill", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_published_numbers_sit_under_the_bound(label, hardware, params, size, decode, prefill):
    [verdict] = run_row_verdicts([_row(decode, prefill)], hardware, _meta(params, size))
    assert verdict.status == PLAUSIBLE, verdict.reason
    assert 0 < verdict.factor <= 1


# Fabricated rows: (what, hardware, metadata, decode, prefill, the figure that must be named)
FABRICATED = [
    ("50,000 tok/s, 7B Q4 on a laptop CPU", CPU("11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz"),
     {"model": {"served": "llama-2-7b-chat.Q4_K_M.gguf", "quantization": "Q4_K_M"}}, 50_000, None, "decode"),
    ("300 tok/s, 70B Q4 on an M2 Pro", APPLE("M2 Pro"), _meta(70.6e9, 39.6 * GIB), 300, None, "decode"),
    ("RTX 4090 decoding an 8B F16 at 400 tok/s", GPU("NVIDIA GeForce RTX 4090"), _meta(8.03e9, 14.96 * GIB), 400,
     None, "decode"),
    ("a Ryzen desktop prefilling a 70B at 20,000 tok/s", CPU("AMD Ryzen 9 7950X 16-Core Processor", 32),
     _meta(70.6e9, 39.6 * GIB), 1.0, 20_000, "prefill"),
    ("M1 decoding a 7B Q4_0 at 60 tok/s", APPLE("M1"), _meta(6.74e9, 3.56 * GIB), 60, None, "decode"),
]


@pytest.mark.parametrize("what,hardware,metadata,decode,prefill,figure", FABRICATED, ids=[f[0] for f in FABRICATED])
def test_fabricated_rows_are_refused_with_the_factor_named(what, hardware, metadata, decode, prefill, figure):
    [verdict] = run_row_verdicts([_row(decode, prefill)], hardware, metadata)
    assert verdict.status == IMPLAUSIBLE
    assert verdict.figure == figure and verdict.factor > 1
    assert verdict.reason.startswith(f"{figure} ") and "× the" in verdict.reason


def test_the_laptop_fabrication_names_its_factor_and_chip():
    [verdict] = run_row_verdicts([_row(50_000)], CPU("11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz"),
                                 {"model": {"served": "llama-2-7b-chat.Q4_K_M.gguf"}})
    # 7B × 4 bits = 3.5 GB per token; 140.8 GB/s / 3.5 GB = 40.2 tok/s; 50,000 / 40.2 = 1,243×
    assert verdict.factor == pytest.approx(50_000 / (140.8e9 / 3.5e9), rel=1e-3)
    assert verdict.reason.startswith("decode 1,243× the bandwidth limit of Intel Core")


def test_a_run_with_one_implausible_row_is_implausible():
    verdicts = run_row_verdicts([_row(20), _row(5000)], APPLE("M2 Pro"), _meta(6.74e9, 3.56 * GIB))
    assert [v.status for v in verdicts] == [PLAUSIBLE, IMPLAUSIBLE]
    run = run_verdict(verdicts)
    assert run.status == IMPLAUSIBLE and run.reason.startswith("1 of 2 rows implausible; worst: decode")


@pytest.mark.parametrize("hardware,metadata,reason", [
    (CPU("Some RISC-V SoC"), _meta(7e9, 4e9), "not in the chip table"),
    (GPU("Imaginary GPU 9000"), _meta(7e9, 4e9), "GPU 'Imaginary GPU 9000' is not in the chip table"),
    (APPLE("M2"), {"model": {"served": "mystery-model"}}, "the model's size is unknown"),
    (APPLE("M2"), {"runtime": {"name": "benchpack-refserver"}, **_meta(7e9, 4e9)}, "scripted endpoint"),
])
def test_what_cannot_be_bounded_is_unchecked_and_says_why(hardware, metadata, reason):
    [verdict] = run_row_verdicts([_row(10)], hardware, metadata)
    assert verdict.status == UNCHECKED and reason in verdict.reason
    assert run_verdict([verdict]).status == UNCHECKED


def test_a_mixture_of_experts_is_bounded_by_its_active_parameters():
    size = model_size(_meta(30.5e9, 17.3 * GIB, file="Qwen3-30B-A3B-Q4_K_M.gguf"))
    assert size.params == pytest.approx(3e9)
    # 3B active of 30.5B: ~1.8 GB read per token; an M4 Max (546 GB/s) may decode ~300 tok/s, not 2,000
    verdicts = run_row_verdicts([_row(85), _row(2000)], APPLE("M4 Max"),
                                _meta(30.5e9, 17.3 * GIB, file="Qwen3-30B-A3B-Q4_K_M.gguf"))
    assert [v.status for v in verdicts] == [PLAUSIBLE, IMPLAUSIBLE]


def test_a_cached_prompt_is_not_counted_as_prefill():
    row = _row(20, prefill=1e7, prompt=512)
    row["tokens"]["cached_prompt"] = 512  # the server evaluated nothing
    [verdict] = run_row_verdicts([row], APPLE("M2 Pro"), _meta(6.74e9, 3.56 * GIB))
    assert verdict.status == PLAUSIBLE and verdict.figure == "decode"


def test_failed_rows_do_not_make_a_run_unchecked():
    verdicts = run_row_verdicts([_row(20), _row(ok=False)], APPLE("M2 Pro"), _meta(6.74e9, 3.56 * GIB))
    assert verdicts[1].status == UNCHECKED
    assert run_verdict(verdicts).status == PLAUSIBLE


def test_declared_memory_uses_the_jedec_formula():
    assert chips.memory_bandwidth_gbs("DDR5-5600", 2) == pytest.approx(89.6)
    assert chips.memory_bandwidth_gbs("DDR4-3200", 8) == pytest.approx(204.8)
    host = platform(CPU("AMD Ryzen 9 7950X 16-Core Processor"),
                    {"hardware": {"memory": {"type": "DDR4-3200", "channels": 2}}})
    assert host.bandwidth_gbs == pytest.approx(51.2)


def test_chip_matching_prefers_the_specific_name():
    assert chips.find_chip("Apple M2 Pro").name == "Apple M2 Pro"
    assert chips.find_chip("Apple M2").name == "Apple M2"
    assert chips.find_chip("AMD Ryzen 9 7950X 16-Core Processor").name.startswith("AMD Ryzen")
    assert chips.find_chip("AMD Ryzen Threadripper PRO 7995WX 96-Cores").name.startswith("AMD Threadripper")
    assert chips.find_chip("Intel(R) Xeon(R) Platinum 8480+").name.startswith("Intel Xeon")
    assert chips.find_chip("NVIDIA GeForce RTX 4070 Ti SUPER").name == "NVIDIA RTX 4070 Ti"
    assert chips.find_chip("NVIDIA GeForce RTX 4070").name == "NVIDIA RTX 4070"
    assert chips.find_chip("Quantum Abacus") is None


@pytest.mark.parametrize("reported,name,bandwidth", [
    ("Apple M5 Max", "Apple M5 Max", 614), ("Apple M5 Pro", "Apple M5 Pro", 307), ("Apple M5", "Apple M5", 153),
])
def test_the_m5_family_has_apples_bandwidth_and_the_neural_accelerators_compute(reported, name, bandwidth):
    chip = chips.find_chip(reported)
    assert (chip.name, chip.bandwidth_gbs) == (name, bandwidth)
    # 2048 INT8 operations per GPU core per cycle at 1.75 GHz: 10, 20 and 40 cores
    assert chip.peak_tflops == pytest.approx({153: 35.8, 307: 71.7, 614: 143.4}[bandwidth])
    assert "apple.com/newsroom" in chip.source and "tzakharko" in chip.source


def test_an_m5_ultra_is_not_bounded_by_the_m5s_figures():
    # no sourced figure for it: left out of the table (unchecked), never bounded by the M5's 153 GB/s
    assert chips.find_chip("Apple M5 Ultra") is None


def test_the_repositorys_real_m5_max_runs_are_plausible():
    """The five real result directories (Qwen2.5-0.5B on an Apple M5 Max, mlx-lm and llama-server) sit under
    the M5 Max's bounds; before the M5 entries they were unchecked."""
    from benchpack.results.resultdir import load_result_dir
    from tests.data_paths import REAL_RESULTS

    for path in sorted(p for p in REAL_RESULTS.iterdir() if p.is_dir()):
        result = load_result_dir(path)
        verdicts = run_row_verdicts(result.rows, result.hardware, result.run_metadata)
        run = run_verdict(verdicts)
        assert run.status == PLAUSIBLE and "Apple M5 Max" in run.reason, (path.name, run)
        assert 0 < run.factor < 1, (path.name, run)
    # The closest: llama-server's `long` case, 811 prompt tokens in 6.4 ms (126k tok/s, 88 % of the compute
    # limit) — served from the prompt cache the warmup filled, which the seed's rows do not record
    # (no tokens.cached_prompt), so all 811 count as evaluated. A bound at the GPU's FP16 rate would refuse it.
    runtime = load_result_dir(REAL_RESULTS / "2026-04-29-llama-server-runtime")
    worst = run_verdict(run_row_verdicts(runtime.rows, runtime.hardware, runtime.run_metadata))
    assert worst.figure == "prefill" and worst.factor == pytest.approx(0.879, abs=0.001)


def test_a_fabricated_m5_max_decode_is_refused():
    # an 8B Q4 model: 614 GB/s ÷ ~4 GB a token allows ~150 tok/s; 1,500 is ten times that
    verdicts = run_row_verdicts([_row(60), _row(1500)], APPLE("M5 Max"), _meta(8.03e9, 4.58 * GIB))
    assert [v.status for v in verdicts] == [PLAUSIBLE, IMPLAUSIBLE]
    assert "bandwidth limit of Apple M5 Max" in verdicts[1].reason


def test_every_chip_has_a_source_and_positive_bandwidth():
    for chip in chips.CHIPS:
        assert chip.source.startswith("https://") and chip.bandwidth_gbs > 0, chip.name


# ---------------------------------------------------------------- attacks (issue 30 item 4): a bound never
# reads the claim it checks. Each of these was plausible or unchecked before the bounds took the server's
# report and the chip table's limits.

H200 = {"cpu_model": "AMD EPYC 9654 96-Core Processor", "cpu_count": 192,
        "gpus": [{"vendor": "nvidia", "model": "NVIDIA H200"}] * 64}


def test_a_size_the_user_claims_does_not_make_a_run_plausible():
    claimed = {"model": {"served": "mystery-model", "params": 1000, "size_bytes": 1000}}
    [verdict] = run_row_verdicts([_row(5000)], APPLE("M2"), claimed)
    assert verdict.status == UNCHECKED and "the model's size is unknown" in verdict.reason
    # The server reported 7B: the user's 1000 parameters change nothing.
    server = _meta(6.74e9, 3.56 * GIB)
    server["model"].update(params=1000, size_bytes=1000)
    [verdict] = run_row_verdicts([_row(5000)], APPLE("M2"), server)
    assert verdict.status == IMPLAUSIBLE and verdict.figure == "decode"


def test_a_claimed_size_smaller_than_the_name_says_is_ignored():
    [verdict] = run_row_verdicts([_row(5000)], APPLE("M2"),
                                 {"model": {"served": "llama-2-70b.Q4_K_M.gguf", "params": 1000}})
    assert verdict.status == IMPLAUSIBLE


def test_sixty_four_gpus_are_not_one_machine():
    host = platform(H200)
    assert host.bandwidth_gbs == pytest.approx(8 * 4800)
    assert "of 64 GPUs named" in host.name
    # 70B F16 (141 GB) at 5,000 tok/s needs 705 TB/s; 64 × H200 would have "allowed" 307 TB/s, 8 allow 38.4.
    [verdict] = run_row_verdicts([_row(300)], H200, _meta(70.6e9, 141e9))
    assert verdict.status == IMPLAUSIBLE and verdict.factor == pytest.approx(300 / (38_400e9 / 141e9), rel=1e-3)


def test_invented_memory_channels_are_ignored():
    ryzen = CPU("AMD Ryzen 9 7950X 16-Core Processor", 32)
    host = platform(ryzen, {"hardware": {"memory": {"type": "DDR5-8000", "channels": 64}}})
    assert host.bandwidth_gbs == pytest.approx(128.0)  # the platform's 2 channels, not 64
    [verdict] = run_row_verdicts([_row(100)], ryzen, {**_meta(6.74e9, 3.56 * GIB),
                                                      "hardware": {"memory": {"type": "DDR5-8000", "channels": 64}}})
    assert verdict.status == IMPLAUSIBLE


def test_declared_memory_on_an_unknown_cpu_leaves_the_row_unchecked():
    metadata = {**_meta(6.74e9, 3.56 * GIB), "hardware": {"memory": {"type": "DDR5-8000", "channels": 64}}}
    [verdict] = run_row_verdicts([_row(5000)], CPU("Some RISC-V SoC"), metadata)
    assert verdict.status == UNCHECKED and "not in the chip table" in verdict.reason


def test_an_unknown_gpu_leaves_the_row_unchecked_even_beside_a_known_cpu():
    hardware = {**GPU("Imaginary GPU 9000"), "cpu_model": "Intel(R) Xeon(R) Platinum 8480+"}
    [verdict] = run_row_verdicts([_row(5000)], hardware, _meta(6.74e9, 3.56 * GIB))
    assert verdict.status == UNCHECKED and "Imaginary GPU 9000" in verdict.reason


@pytest.mark.parametrize("claim", [
    {"served": "Qwen3-30B-MoE"},
    {"served": "llama-30b-moe.gguf"},
    {"served": "qwen3-30b.gguf", "expert_count": 1000, "expert_used_count": 1},
], ids=["MoE name", "-moe name", "tiny expert share in metadata"])
def test_an_expert_share_not_stated_by_the_model_file_does_not_loosen_the_bound(claim):
    [verdict] = run_row_verdicts([_row(300)], APPLE("M2"), {"model": claim})
    assert verdict.status == IMPLAUSIBLE and verdict.figure == "decode"  # bounded as dense
    assert "bounded as dense" in model_size({"model": claim}).source


def test_expert_counts_the_server_read_from_the_file_give_the_share():
    metadata = _meta(30.5e9, 17.3 * GIB, name="qwen3:30b")
    metadata["benchpack"]["server_reported"]["model"].update(expert_count=128, expert_used_count=8)
    assert model_size(metadata).bytes == pytest.approx(17.3 * GIB * 8 / 128)


def test_a_draft_key_in_user_metadata_does_not_skip_the_decode_bound():
    metadata = {**_meta(6.74e9, 3.56 * GIB),
                "runtime": {"config": {"no_draft_at_all": 1}, "server_command": "llama-server --model-draft x.gguf"}}
    [verdict] = run_row_verdicts([_row(5000)], APPLE("M2"), metadata)
    assert verdict.status == IMPLAUSIBLE and verdict.figure == "decode"


def test_a_draft_model_the_server_reports_lifts_the_decode_bound():
    metadata = _meta(6.74e9, 3.56 * GIB)
    metadata["benchpack"]["server_reported"]["config"] = {"model_draft": "draft.gguf"}
    [verdict] = run_row_verdicts([_row(5000)], APPLE("M2"), metadata)
    assert verdict.status == UNCHECKED and "speculative" in verdict.reason


# ---------------------------------------------------------------- memory fit (issue 32 item 2)

LAPTOP_16GB = {**CPU("11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz"), "ram_mb": 16 * 1024}


def test_a_model_that_does_not_fit_in_memory_is_implausible():
    # 70B Q4_K_M: 39.6 GiB of weights; 16 GiB less 1.6 GiB for the OS holds 14.4 GiB.
    [verdict] = run_row_verdicts([_row(1.0)], LAPTOP_16GB, _meta(70.6e9, 39.6 * GIB))
    assert verdict.status == IMPLAUSIBLE and verdict.figure == "memory"
    assert verdict.factor == pytest.approx(39.6 / 14.4, rel=1e-3)
    assert "runtime.offload" in verdict.reason


def test_weights_from_the_reported_quantization_are_checked_too():
    # No size from the server: 70B × 4 bits (Q4_K_M) = 35 GB, still more than the laptop holds.
    [verdict] = run_row_verdicts([_row(1.0)], LAPTOP_16GB,
                                 {"model": {"served": "llama-2-70b.Q4_K_M.gguf", "quantization": "Q4_K_M"}})
    assert verdict.status == IMPLAUSIBLE and verdict.figure == "memory"


def test_declared_offloading_lifts_the_memory_bound_but_not_the_speed_bound():
    metadata = {**_meta(70.6e9, 39.6 * GIB), "runtime": {"offload": "mmap from NVMe"}}
    [slow] = run_row_verdicts([_row(0.5)], LAPTOP_16GB, metadata)
    assert slow.status == PLAUSIBLE
    [fast] = run_row_verdicts([_row(22.5)], LAPTOP_16GB, metadata)
    assert fast.status == IMPLAUSIBLE and fast.figure == "decode"


def test_vram_counts_towards_what_fits():
    # 32 GiB RAM (28.8 usable) + 24 GiB VRAM holds a 70B Q4 (39.6 GiB); 16 GiB RAM + 8 GiB VRAM does not.
    big = {**GPU("NVIDIA GeForce RTX 4090"), "ram_mb": 32 * 1024}
    big["gpus"] = [{**big["gpus"][0], "vram_mb": 24 * 1024}]
    [verdict] = run_row_verdicts([_row(10)], big, _meta(70.6e9, 39.6 * GIB))
    assert verdict.status == PLAUSIBLE
    small = {**GPU("NVIDIA GeForce RTX 4060"), "ram_mb": 16 * 1024}
    small["gpus"] = [{**small["gpus"][0], "vram_mb": 8 * 1024}]
    [verdict] = run_row_verdicts([_row(1)], small, _meta(70.6e9, 39.6 * GIB))
    assert verdict.status == IMPLAUSIBLE and verdict.figure == "memory"
