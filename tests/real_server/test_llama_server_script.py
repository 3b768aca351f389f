"""scripts/llama-server.sh never caches a binary that cannot answer one request."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.realserver import SCRIPT, model_path, server_binary

pytestmark = pytest.mark.real_server


def smoke(binary: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), "--smoke", str(binary)], capture_output=True, text=True, timeout=300)


def test_a_binary_that_crashes_on_start_fails_the_smoke_test(tmp_path, llama_server):
    crashing = tmp_path / "llama-server"
    crashing.write_text("#!/bin/sh\necho 'ggml_backend_amx_mul_mat: simulated crash' >&2\nkill -SEGV $$\n")
    crashing.chmod(0o755)
    result = smoke(crashing)
    assert result.returncode == 1
    assert "smoke test FAILED" in result.stderr
    assert "simulated crash" in result.stderr


def test_a_server_that_answers_health_but_not_a_completion_fails(tmp_path, llama_server):
    # Healthy until the first request, like the AMX build: /health answers, the
    # completion does not (the connection is dropped).
    fake = tmp_path / "llama-server"
    fake.write_text(
        "#!/usr/bin/env python3\n"
        "import sys, http.server\n"
        "port = int(sys.argv[sys.argv.index('--port') + 1])\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.end_headers(); self.wfile.write(b'{}')\n"
        "    def do_POST(self):\n"
        "        sys.exit(139)\n"
        "http.server.HTTPServer(('127.0.0.1', port), H).serve_forever()\n")
    fake.chmod(0o755)
    assert smoke(fake).returncode == 1


def test_the_cached_binary_passes_the_smoke_test(llama_server):
    result = smoke(server_binary())
    assert result.returncode == 0, result.stderr
    assert "smoke test passed" in result.stderr
    assert model_path().is_file()


def test_the_cache_path_changes_with_the_build_flags():
    text = SCRIPT.read_text()
    assert "GGML_NATIVE=OFF" in text and "GGML_AMX_INT8=OFF" in text
    # The digest of the flags is part of the binary's directory name.
    assert server_binary().parent.name.startswith("0.3.36-")
    assert len(server_binary().parent.name.split("-")[-1]) == 10
