"""Summarise h43d-pool-harness.py output: per arm, medians and ranges; ratio to the same round's aiohttp."""
import json, statistics as st, sys
lines = [json.loads(l) for f in sys.argv[1:] for l in open(f)]
lines = [l for l in lines if all(u["rc"] == 0 for u in l.values() if isinstance(u, dict))]  # a failed run (stale out dir) is not a figure
arms = [a for a in ("base", "p1", "p2", "p4", "p8") if a in lines[0]]
loads = [l["load"] for l in lines]
print(f"{len(lines)} rounds, load {min(loads):.1f}-{max(loads):.1f} (median {st.median(loads):.1f})")
def per_chunk(u): return u["cpu_s"] / u["chunks"]
for a in arms:
    ratio = [per_chunk(l[a]) / per_chunk(l["aiohttp"]) for l in lines]
    ttft = [l[a]["ttft_p99"] for l in lines]; tpot = [l[a]["tpot_p99"] for l in lines]
    ttft_behind = sum(l[a]["ttft_p99"] > l["aiohttp"]["ttft_p99"] for l in lines)
    tpot_behind = sum(l[a]["tpot_p99"] > l["aiohttp"]["tpot_p99"] for l in lines)
    upper = sum(l[a]["upper"] for l in lines); lower = sum(l[a]["lower"] for l in lines); rows = sum(l[a]["rows"] for l in lines)
    us = [per_chunk(l[a]) * 1e6 for l in lines]
    vs = [l[a]["nvcsw"] for l in lines]
    paired = [per_chunk(l[a]) / per_chunk(l["base"]) - 1 for l in lines]
    print(f"{a:5s} us/chunk {st.median(us):6.1f} ({min(us):.0f}-{max(us):.0f}) vs base {100*st.median(paired):+5.1f}% "
          f"lower in {sum(p < 0 for p in paired)}/{len(lines)} | ratio {st.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f}) >0.6 in {sum(r > 0.6 for r in ratio)} "
          f"| vcsw {st.median(vs):.0f} | TTFT p99 {st.median(ttft):.1f} ({min(ttft):.1f}-{max(ttft):.1f}) behind aio {ttft_behind} "
          f"| TPOT p99 {st.median(tpot):.1f} ({min(tpot):.1f}-{max(tpot):.1f}) behind aio {tpot_behind} | upper {upper}/{rows} lower {lower}")
aio_t = [l["aiohttp"]["ttft_p99"] for l in lines]; aio_p = [l["aiohttp"]["tpot_p99"] for l in lines]
print(f"aiohttp TTFT p99 {st.median(aio_t):.1f} ({min(aio_t):.1f}-{max(aio_t):.1f}) TPOT p99 {st.median(aio_p):.1f} ({min(aio_p):.1f}-{max(aio_p):.1f})")
