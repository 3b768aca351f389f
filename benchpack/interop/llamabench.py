"""llama-bench `-o json` (an array of tests) and `-o jsonl` (one test a line).

Each test is `n_prompt` tokens of prompt processing (pp), `n_gen` tokens of
generation (tg), or both, repeated `-r` times inside the llama.cpp process
(no HTTP, no sampling of a chat answer). Its figures keep their own names:
- `avg_ts` of a pp test is tokens ÷ the batch's compute time; Benchpack's
  `prefill_tps` is prompt tokens ÷ TTFT over HTTP (with the first token's
  decode and the request's overhead): kept as `pp_tps`.
- `avg_ts` of a tg test is n_gen ÷ the time of all n_gen tokens, the first one
  included; Benchpack's decode rate is 1 ÷ TPOT over the gaps between tokens:
  kept as `tg_tps`.
One row per sample (`samples_ns`/`samples_ts`); the test's own `avg_*`/`stddev_*`
are copied to run-metadata unchanged.
"""

from __future__ import annotations

from benchpack.interop.common import Imported, Node, parse_json_text, read_json_lines, row, sha256

TOOL = "llama-bench"
PARAMETERS = ("n_batch", "n_ubatch", "n_threads", "type_k", "type_v", "n_gpu_layers", "split_mode", "main_gpu",
              "no_kv_offload", "flash_attn", "tensor_split", "use_mmap", "embeddings", "cpu_mask", "cpu_strict",
              "poll", "n_cpu_moe", "devices")
MAX_SAMPLES = 100_000


def parse(name: str, data: bytes, tool_version: str | None) -> Imported:
    stripped = data.lstrip()
    if stripped.startswith(b"["):
        tests = Node(name, parse_json_text(name, data)).items(most=100_000)
    else:
        tests = [Node(name, value, f"line {number}") for number, value in read_json_lines(name, data)]
    if not tests:
        raise Node(name, None).refuse("holds no tests")
    rows, tool_figures, settings = [], {}, {}
    version = model = None
    runtime = None
    for test in tests:
        test.obj()
        commit = test.text("build_commit", most=64)
        number = test.integer("build_number")
        this_version = tool_version or f"b{number}"
        if version is not None and this_version != version:
            raise test.refuse(f"build b{number} differs from the file's first test ({version})", "build_number")
        version = this_version
        filename = test.text("model_filename", most=4096)
        model = filename.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".gguf") or None  # the file, not its path
        n_prompt = test.integer("n_prompt", most=10_000_000)
        n_gen = test.integer("n_gen", most=10_000_000)
        depth = test.integer("n_depth", required=False) or 0
        if n_prompt == 0 and n_gen == 0:
            raise test.refuse("n_prompt and n_gen are both 0: not a test", "n_gen")
        case = "+".join(part for part in (f"pp{n_prompt}" if n_prompt else "", f"tg{n_gen}" if n_gen else "") if part)
        case += f"@d{depth}" if depth else ""
        if case in tool_figures:
            case += f"#{len([k for k in tool_figures if k.split('#')[0] == case]) + 1}"
        figures = {key: test.number(key) for key in ("avg_ns", "stddev_ns", "avg_ts", "stddev_ts")}
        samples_ns = [sample.number() for sample in test.get("samples_ns").items(most=MAX_SAMPLES)]
        samples_ts = [sample.number() for sample in test.get("samples_ts").items(most=MAX_SAMPLES)]
        if not samples_ns:
            raise test.get("samples_ns").refuse("is empty: the test has no samples")
        if len(samples_ns) != len(samples_ts):
            raise test.get("samples_ts").refuse(f"has {len(samples_ts)} entries but samples_ns has {len(samples_ns)}")
        kind = "pp_tps" if not n_gen else ("tg_tps" if not n_prompt else "pp_tg_tps")
        tool_figures[case] = {**figures, "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": depth,
                              "samples": len(samples_ns), "figure": kind}
        settings[case] = {key: test.get(key).value for key in PARAMETERS
                          if test.has(key) and isinstance(test.get(key).value, (str, int, float, bool))}
        if runtime is None:
            runtime = {"name": "llama.cpp", "version": version, "build_commit": commit,
                       "backends": test.text("backends", required=False) or None}
            settings["cpu_info"] = test.text("cpu_info", required=False, most=1024)
            settings["gpu_info"] = test.text("gpu_info", required=False, most=1024)
            settings["model_filename"] = filename
            settings["model_type"] = test.text("model_type", required=False)
            settings["model_size"] = test.integer("model_size", required=False)
            settings["model_n_params"] = test.integer("model_n_params", required=False)
        for ns, ts in zip(samples_ns, samples_ts):
            rows.append(row(TOOL, version, case, model, ok=True,
                            tokens={"prompt": n_prompt or None, "output": n_gen or None},
                            own={"sample_ns": ns, "sample_ts": ts, "figure": kind}))
    return Imported(tool=TOOL, tool_version=version, source_name=name, source_sha256=sha256(data), model=model,
                    rows=rows, figures={}, tool_figures=tool_figures, settings=settings,
                    unknown=["hardware (llama-bench records only the CPU/GPU names)"], runtime=runtime)
