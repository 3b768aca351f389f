#!/usr/bin/env bash
# The other tools Benchpack's interop tests talk to, each in a pinned virtual
# environment of its own (never the project's): Harbor (needs Python >= 3.12),
# GuideLLM and AIPerf (the same pins as bench/sidebyside.py).
#
# Idempotent: an environment whose pinned package is already installed is kept.
# Prints one line per tool: NAME PATH-TO-ITS-VENV. The tests find the venvs
# through `--paths` (tests/interop/tools.py), so the layout has one owner.
#
# Env overrides: BENCHPACK_INTEROP_TOOLS (default ~/.cache/benchpack-interop),
#                BENCHPACK_PYTHON312 (a Python >= 3.12 for Harbor; default: the
#                first of python3.12, python3.13, ~/.pyenv/versions/3.12*/bin/python).
#
# vLLM's `bench serve` client is not installed: the vllm wheel pulls CUDA
# torch (gigabytes) and has no CPU-only client package; its golden file is
# written from vLLM's documented result format (tests/data/interop/README.md).
set -euo pipefail

HARBOR=harbor==0.25.0
GUIDELLM=guidellm==0.8.1
AIPERF=aiperf==0.13.0

ROOT=${BENCHPACK_INTEROP_TOOLS:-$HOME/.cache/benchpack-interop}
log() { echo "interop-tools.sh: $*" >&2; }

if [[ "${1:-}" == "--paths" ]]; then
    echo "harbor $ROOT/harbor-${HARBOR#*==}"
    echo "guidellm $ROOT/guidellm-${GUIDELLM#*==}"
    echo "aiperf $ROOT/aiperf-${AIPERF#*==}"
    exit 0
fi

python312() {
    if [[ -n "${BENCHPACK_PYTHON312:-}" ]]; then echo "$BENCHPACK_PYTHON312"; return; fi
    local candidate
    for candidate in python3.12 python3.13 "$HOME"/.pyenv/versions/3.12*/bin/python; do
        if command -v "$candidate" >/dev/null 2>&1 \
           && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            command -v "$candidate"; return
        fi
    done
    log "no Python >= 3.12 found for Harbor (set BENCHPACK_PYTHON312)"; exit 1
}

# ensure PYTHON VENV REQUIREMENT: the venv with exactly REQUIREMENT installed.
ensure() {
    local python=$1 venv=$2 requirement=$3 name=${3%%==*} version=${3#*==}
    if [[ -x "$venv/bin/python" ]] \
       && "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('$name') != '$version')" 2>/dev/null; then
        return
    fi
    log "installing $requirement into $venv"
    # The version probe above is the "done" mark: an interrupted install
    # leaves the pinned package missing, so the next run installs again.
    [[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$requirement"
}

mkdir -p "$ROOT"
ensure "$(python312)" "$ROOT/harbor-${HARBOR#*==}" "$HARBOR"
ensure python3 "$ROOT/guidellm-${GUIDELLM#*==}" "$GUIDELLM"
ensure python3 "$ROOT/aiperf-${AIPERF#*==}" "$AIPERF"
"$0" --paths
