"""A shipped, sourced table of accelerators and memory systems: the physics behind plausibility bounds.

Each entry: a display name, a pattern matched against what `hardware.json`
reports (a GPU's model, the chip, the CPU model), the peak memory bandwidth
in GB/s (10^9 bytes/s), the peak dense throughput in TFLOP/s (or TOPS) at
the fastest precision a llama.cpp-class runtime uses on that chip, and where
the figures come from (the vendor's specification page or datasheet).

Every figure is the *most* the part can do — the largest memory
configuration, the fastest precision (INT8/FP8/FP4 tensor throughput where
the chip has it), the highest-binned variant sold under the name — because
a plausibility bound must never refuse a real result: it is an upper bound,
and a loose one is still tight enough to catch a fabricated number (a
fabrication is usually off by an order of magnitude, not by 20 %).

Apple GPUs: Apple publishes bandwidth, not FLOP/s; the FP32 figures are the
GPU's ALU count × 2 × clock as commonly derived, doubled here as a loose
FP16 bound. From the M5 on, every GPU core holds a Neural Accelerator (matrix
units): Apple states the bandwidth and "over 4x the peak GPU compute for AI" of
the M4, no FLOP/s; the M5 entries take the INT8 matrix rate measured on the
A19's GPU, the same core (about 2048 operations per core per cycle), times the
cores of the largest GPU sold under the name at 1.75 GHz — Zakharko's
microbenchmark, which estimates 130 TOPS for the 40-core M5 Max; 143 TOPS here
keeps the bound loose. CPU entries bound a whole platform (all sockets, every memory
channel at the fastest supported speed); a run's metadata may instead name
its memory (`hardware.memory: {"type": "DDR5-5600", "channels": 2}`), which
`memory_bandwidth_gbs` turns into a bandwidth by the JEDEC formula.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

APPLE = "https://support.apple.com/en-us/docspecs"  # Apple's tech-specs pages (memory bandwidth per chip)
APPLE_NEWSROOM = "https://www.apple.com/newsroom/"  # launch announcements state the bandwidth (e.g. M4 Pro 273 GB/s)
# M5 (15 October 2025): 153 GB/s, 10-core GPU; M5 Pro and M5 Max (3 March 2026): up to 307 and 614 GB/s,
# 20- and 40-core GPUs, as Apple's announcements state and the reports of them quote.
APPLE_M5 = ("https://www.apple.com/newsroom/ (M5, 15 Oct 2025: 153GB/s; reported at "
            "https://the-decoder.com/apples-m5-chip-brings-faster-ai-to-macbook-ipad-and-vision-pro/); "
            "https://tzakharko.github.io/apple-neural-accelerators-benchmark (GPU Neural Accelerator INT8 rate)")
APPLE_M5_PRO_MAX = ("https://www.apple.com/newsroom/ (M5 Pro and M5 Max, 3 Mar 2026: 307 and 614GB/s; reported at "
                    "https://www.macrumors.com/2026/03/03/apple-unveils-macbook-pro-with-m5-pro-and-m5-max-chips-with-neural-accelerators/); "
                    "https://tzakharko.github.io/apple-neural-accelerators-benchmark (GPU Neural Accelerator INT8 rate)")
NVIDIA_ADA = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
NVIDIA_AMPERE = "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf"
NVIDIA_BLACKWELL = "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf"
NVIDIA_TURING = "https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf"
NVIDIA_PASCAL = "https://images.nvidia.com/content/pdf/tesla/whitepaper/pascal-architecture-whitepaper.pdf"
NVIDIA_A100 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
NVIDIA_H100 = "https://www.nvidia.com/en-us/data-center/h100/"
NVIDIA_H200 = "https://www.nvidia.com/en-us/data-center/h200/"
NVIDIA_B200 = "https://www.nvidia.com/en-us/data-center/dgx-b200/"
NVIDIA_L40S = "https://www.nvidia.com/en-us/data-center/l40s/"
NVIDIA_L4 = "https://www.nvidia.com/en-us/data-center/l4/"
NVIDIA_T4 = "https://www.nvidia.com/en-us/data-center/tesla-t4/"
NVIDIA_V100 = "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
NVIDIA_SPARK = "https://www.nvidia.com/en-us/products/workstations/dgx-spark/"
AMD_RDNA3 = "https://www.amd.com/en/products/graphics/desktops/radeon/7000-series/amd-radeon-rx-7900xtx.html"
AMD_RDNA4 = "https://www.amd.com/en/products/graphics/desktops/radeon/9000-series/amd-radeon-rx-9070xt.html"
AMD_RDNA2 = "https://www.amd.com/en/products/graphics/desktops/radeon/6000-series/amd-radeon-rx-6900-xt.html"
AMD_MI300 = "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"
AMD_MI200 = "https://www.amd.com/en/products/accelerators/instinct/mi200.html"
AMD_STRIX_HALO = "https://www.amd.com/en/products/processors/laptop/ryzen/ai-300-series/amd-ryzen-ai-max-plus-395.html"
INTEL_XEON6 = "https://www.intel.com/content/www/us/en/products/details/processors/xeon/xeon6-p-cores.html"
INTEL_CORE = "https://www.intel.com/content/www/us/en/products/details/processors/core-ultra.html"
AMD_EPYC = "https://www.amd.com/en/products/processors/server/epyc/9005-series.html"
AMD_THREADRIPPER = "https://www.amd.com/en/products/processors/workstations/ryzen-threadripper.html"
AMD_RYZEN = "https://www.amd.com/en/products/processors/desktops/ryzen.html"
JEDEC = "https://www.jedec.org/standards-documents/docs/jesd79-5c"  # DDR5: 64-bit channel x MT/s


@dataclass(frozen=True)
class Chip:
    name: str
    kind: str  # "apple" | "unified" (one memory for CPU and GPU) | "gpu" | "cpu"
    pattern: str  # regex, case-insensitive, searched in the reported model string
    bandwidth_gbs: float
    peak_tflops: float
    source: str
    # CPU platforms: the memory channels of the whole platform (all sockets); a run's declared channels
    # above this are invented and ignored. None for GPUs and unified-memory chips.
    channels: int | None = None

    def matches(self, text: str) -> bool:
        return re.search(self.pattern, text, re.IGNORECASE) is not None


def _apple(name: str, pattern: str, bandwidth: float, fp32_tflops: float, source: str = APPLE) -> Chip:
    return Chip(f"Apple {name}", "apple", pattern, bandwidth, round(2 * fp32_tflops, 1), source)


# The GPU Neural Accelerator's INT8 matrix rate (module docstring): operations per core per cycle, and a clock.
M5_INT8_OPS_PER_CORE_CYCLE = 2048
M5_GPU_CLOCK_HZ = 1.75e9


def _apple_m5(name: str, pattern: str, bandwidth: float, gpu_cores: int, source: str) -> Chip:
    tops = M5_INT8_OPS_PER_CORE_CYCLE * gpu_cores * M5_GPU_CLOCK_HZ / 1e12
    return Chip(f"Apple {name}", "apple", pattern, bandwidth, round(tops, 1), source)


# Most specific first: "M2 Pro" must be tried before "M2".
CHIPS: tuple[Chip, ...] = (
    # Apple silicon (unified memory: one bandwidth for CPU and GPU)
    _apple("M1 Ultra", r"\bM1 Ultra\b", 800, 21.2),
    _apple("M1 Max", r"\bM1 Max\b", 400, 10.6),
    _apple("M1 Pro", r"\bM1 Pro\b", 200, 5.3),
    _apple("M1", r"\bM1\b", 68.25, 2.6),
    _apple("M2 Ultra", r"\bM2 Ultra\b", 800, 27.2),
    _apple("M2 Max", r"\bM2 Max\b", 400, 13.6),
    _apple("M2 Pro", r"\bM2 Pro\b", 200, 6.8),
    _apple("M2", r"\bM2\b", 100, 3.6),
    _apple("M3 Ultra", r"\bM3 Ultra\b", 819, 33.0, APPLE_NEWSROOM),
    _apple("M3 Max", r"\bM3 Max\b", 400, 16.4),
    _apple("M3 Pro", r"\bM3 Pro\b", 150, 7.4),
    _apple("M3", r"\bM3\b", 100, 4.1),
    _apple("M4 Max", r"\bM4 Max\b", 546, 18.4, APPLE_NEWSROOM),
    _apple("M4 Pro", r"\bM4 Pro\b", 273, 9.2, APPLE_NEWSROOM),
    _apple("M4", r"\bM4\b", 120, 4.6, APPLE_NEWSROOM),
    _apple_m5("M5 Max", r"\bM5 Max\b", 614, 40, APPLE_M5_PRO_MAX),
    _apple_m5("M5 Pro", r"\bM5 Pro\b", 307, 20, APPLE_M5_PRO_MAX),
    # Not "M5 Ultra": no figure of Apple's for it is sourced here, and the M5's would refuse its real results.
    _apple_m5("M5", r"\bM5\b(?! Ultra)", 153, 10, APPLE_M5),
    # NVIDIA consumer (dense INT8 tensor TOPS; FP4 on Blackwell)
    Chip("NVIDIA RTX 5090", "gpu", r"RTX 5090", 1792, 1676, NVIDIA_BLACKWELL),
    Chip("NVIDIA RTX 5080", "gpu", r"RTX 5080", 960, 901, NVIDIA_BLACKWELL),
    Chip("NVIDIA RTX 5070 Ti", "gpu", r"RTX 5070 Ti", 896, 703, NVIDIA_BLACKWELL),
    Chip("NVIDIA RTX 5070", "gpu", r"RTX 5070\b", 672, 494, NVIDIA_BLACKWELL),
    Chip("NVIDIA RTX 4090", "gpu", r"RTX 4090", 1008, 661, NVIDIA_ADA),
    Chip("NVIDIA RTX 4080", "gpu", r"RTX 4080", 736, 418, NVIDIA_ADA),
    Chip("NVIDIA RTX 4070 Ti", "gpu", r"RTX 4070 Ti", 672, 353, NVIDIA_ADA),
    Chip("NVIDIA RTX 4070", "gpu", r"RTX 4070\b", 504, 284, NVIDIA_ADA),
    Chip("NVIDIA RTX 4060 Ti", "gpu", r"RTX 4060 Ti", 288, 177, NVIDIA_ADA),
    Chip("NVIDIA RTX 4060", "gpu", r"RTX 4060\b", 272, 121, NVIDIA_ADA),
    Chip("NVIDIA RTX 6000 Ada", "gpu", r"RTX 6000 Ada", 960, 729, NVIDIA_ADA),
    Chip("NVIDIA RTX 3090", "gpu", r"RTX 3090", 1008, 320, NVIDIA_AMPERE),  # 3090 Ti's figures cover the 3090
    Chip("NVIDIA RTX 3080", "gpu", r"RTX 3080", 912, 273, NVIDIA_AMPERE),
    Chip("NVIDIA RTX 3070", "gpu", r"RTX 3070", 608, 174, NVIDIA_AMPERE),
    Chip("NVIDIA RTX 3060", "gpu", r"RTX 3060", 448, 130, NVIDIA_AMPERE),
    Chip("NVIDIA RTX A6000", "gpu", r"RTX A6000", 768, 310, NVIDIA_AMPERE),
    Chip("NVIDIA RTX 2080 Ti", "gpu", r"RTX 2080", 616, 228, NVIDIA_TURING),
    Chip("NVIDIA GTX 1080 Ti", "gpu", r"GTX 1080", 484, 45.4, NVIDIA_PASCAL),  # INT8 dp4a = 4 x FP32
    # NVIDIA data centre
    Chip("NVIDIA B200", "gpu", r"\bB200\b", 8000, 9000, NVIDIA_B200),
    Chip("NVIDIA H200", "gpu", r"\bH200\b", 4800, 1979, NVIDIA_H200),
    Chip("NVIDIA H100", "gpu", r"\bH100\b", 3900, 1979, NVIDIA_H100),
    Chip("NVIDIA A100", "gpu", r"\bA100\b", 2039, 624, NVIDIA_A100),
    Chip("NVIDIA L40S", "gpu", r"\bL40S?\b", 864, 733, NVIDIA_L40S),
    Chip("NVIDIA L4", "gpu", r"\bL4\b", 300, 242, NVIDIA_L4),
    Chip("NVIDIA T4", "gpu", r"\bT4\b", 320, 130, NVIDIA_T4),
    Chip("NVIDIA V100", "gpu", r"\bV100\b", 1134, 130, NVIDIA_V100),
    Chip("NVIDIA DGX Spark (GB10)", "gpu", r"\bGB10\b", 273, 1000, NVIDIA_SPARK),
    # AMD GPUs
    Chip("AMD Instinct MI300X", "gpu", r"MI300", 5300, 2615, AMD_MI300),
    Chip("AMD Instinct MI250X", "gpu", r"MI250|MI210", 3277, 383, AMD_MI200),
    Chip("AMD Radeon RX 9070 XT", "gpu", r"RX 9070", 645, 389, AMD_RDNA4),
    Chip("AMD Radeon RX 7900 XTX", "gpu", r"RX 7900", 960, 123, AMD_RDNA3),
    Chip("AMD Radeon RX 6900 XT", "gpu", r"RX 6[89]\d0", 576, 46.1, AMD_RDNA2),
    Chip("AMD Ryzen AI Max (Strix Halo)", "unified", r"Ryzen AI Max", 256, 59.4, AMD_STRIX_HALO),
    # CPU platforms: every socket, every channel at the fastest supported memory.
    # Compute: cores x 5 GHz x 2048 INT8 ops/cycle (AMX's ceiling) — loose for any x86/Arm core.
    Chip("Intel Xeon (2 sockets x 12-channel MRDIMM-8800)", "cpu", r"\bXeon\b", 1689.6, 0, INTEL_XEON6, 24),
    Chip("AMD EPYC (2 sockets x 12-channel DDR5-6400)", "cpu", r"\bEPYC\b", 1228.8, 0, AMD_EPYC, 24),
    Chip("AMD Threadripper (8-channel DDR5-6400)", "cpu", r"Threadripper", 409.6, 0, AMD_THREADRIPPER, 8),
    # Ryzen before Intel Core: AMD's model strings say "16-Core Processor".
    Chip("AMD Ryzen laptop/desktop (2-channel DDR5-8000)", "cpu", r"\bRyzen\b", 128.0, 0, AMD_RYZEN, 2),
    Chip("Intel Core laptop/desktop (2-channel DDR5-8800 / 128-bit LPDDR5X-8533)", "cpu",
         r"Intel.*\bCore\b|Core\(TM\)|Core Ultra|\bi[3579]-\d{4,5}", 140.8, 0, INTEL_CORE, 2),
)

# The most GPUs one machine holds: NVIDIA's HGX/DGX boards and AMD's MI300X platform carry 8 accelerators
# on one host; a hardware.json naming more describes a cluster (or nothing), and its extra GPUs add no
# bandwidth to a bound. Tensor parallelism across machines is not one system.
MAX_GPUS_PER_MACHINE = 8
MAX_GPUS_SOURCE = "https://www.nvidia.com/en-us/data-center/hgx/ (HGX: 8 GPUs per board); " + AMD_MI300

CPU_OPS_PER_CORE_TFLOPS = 5.0e9 * 2048 / 1e12  # 10.24 TOPS per core: a ceiling no core reaches


def find_chip(text: str | None, kinds: tuple[str, ...] = ("apple", "unified", "gpu", "cpu")) -> Chip | None:
    if not isinstance(text, str) or not text:
        return None
    for chip in CHIPS:
        if chip.kind in kinds and chip.matches(text):
            return chip
    return None


_MEMORY = re.compile(r"^(LP)?DDR([45])X?-?(\d{4,5})$", re.IGNORECASE)


def memory_bandwidth_gbs(memory_type: str, channels: int) -> float | None:
    """JEDEC: a 64-bit channel moves 8 bytes per transfer; `DDR5-5600` x 2 channels = 89.6 GB/s."""
    match = _MEMORY.match(str(memory_type).replace(" ", ""))
    if not match or not isinstance(channels, int) or isinstance(channels, bool) or channels < 1:
        return None
    return int(match.group(3)) * 8 * channels / 1000
