"""The run path imports only what a run uses (docs/measurement.md, "The whole process's cost").

`benchpack run` is often short: a hundred requests. What the process imports
before its first request is then a large share of its CPU per chunk, so the
modules a plain-http run never needs stay out: httpx's command-line client
(click, rich, pygments), rich (only a terminal's bar), numpy (nowhere in the core: the
summary's bootstrap bands are pure Python, benchpack/measurement/stats.py), and httpx's own transport with
its SSL context (https only). `compare` and `report` read what a run wrote and stay as light.
"""

import json
import re
import socket
import subprocess
import sys

import pytest

from benchpack.refserver.server import RefServer
from tests.run.test_runner_support import chat_case, write_pack

# jsonschema is also kept out of the pack loader, on the CLI's branch (h18); scoring imports it only for a
# json-schema check. Importing `ssl` is cheap; building a context (httpcore's transport) is what costs.
HEAVY = ("click", "rich", "pygments", "numpy", "httpx._main", "httpcore")


def imported_by(code: str) -> list[str]:
    probe = (f"{code}\nimport sys, json\n"
             f"print(json.dumps([m for m in {HEAVY!r} if sys.modules.get(m) is not None]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_runner_and_adapters_import_nothing_heavy():
    assert imported_by("import benchpack.run.runner, benchpack.adapters.openai_chat, benchpack.run.progress") == []


def test_building_the_adapter_client_and_a_plain_progress_sink_imports_nothing_heavy():
    code = ("import io\nfrom benchpack.adapters import get_adapter\nfrom benchpack.run.progress import progress_for\n"
            "from benchpack.run.server_info import probe_client\n"
            "a = get_adapter('openai-chat'); a.client; probe_client().close()\nprogress_for(1, 0, io.StringIO())")
    assert imported_by(code) == []


# Imported by nothing `benchpack run` does before its last request (the modules it needs after it,
# for the end-of-run table, are imported then): each was once on the path (docs/measurement.md).
NOT_BEFORE_THE_FIRST_REQUEST = (
    "psutil",  # hardware.json reads RAM and CPUs with sysconf
    "plistlib",  # macOS energy (powermetrics) only
    "difflib",  # only to name the nearest pack id of one that was not found
    "benchpack.packs.catalogue",  # only for a bundled pack named by its id, not a pack directory
    "xml.sax", "benchpack.reporting.charts", "benchpack.reporting.lanes",  # charts of a report's lanes
    "benchpack.reporting.report", "benchpack.reporting.compare", "benchpack.results.plausibility",
    "benchpack.commands.compare", "benchpack.commands.registry", "benchpack.commands.report",
)


def loaded(code: str, names: tuple[str, ...]) -> list[str]:
    probe = f"{code}\nimport sys, json\nprint(json.dumps([m for m in {names!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_what_the_run_imports_before_its_first_request_leaves_out_the_rest():
    """The modules `benchpack run` imports up to its first request: the CLI with only the run command,
    commands.run's handler imports, the runner, the pack loader, the hardware probe (not GPUs' libraries)."""
    code = ("import argparse\nfrom benchpack.cli import build_parser\nbuild_parser('run')\n"
            "from benchpack.packs.loader import load_pack, resolve_pack_path\nresolve_pack_path('.')\n"
            "from benchpack.run.progress import progress_for\nfrom benchpack.reporting.run_summary import count_rows\n"
            "from benchpack.run.metadata import load_run_metadata\n"
            "from benchpack.run.runner import RunOptions, effective_pack, run_pack\n"
            "from benchpack.run.hardware import collect_hardware\ncollect_hardware()\n"
            "from benchpack.adapters import get_adapter\nget_adapter('openai-chat').client")
    assert loaded(code, NOT_BEFORE_THE_FIRST_REQUEST) == []


def test_collecting_the_hardware_starts_no_process_on_linux():
    if not sys.platform.startswith("linux"):
        return
    code = ("import subprocess\nstarted = []\nreal = subprocess.Popen.__init__\n"
            "def init(self, *a, **k):\n    started.append(a[0] if a else k.get('args'))\n    real(self, *a, **k)\n"
            "subprocess.Popen.__init__ = init\n"
            "from benchpack.run.hardware import collect_hardware\ncollect_hardware()\n"
            "import json\nprint(json.dumps([list(a) if isinstance(a, (list, tuple)) else a for a in started]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    started = json.loads(out.stdout.strip().splitlines()[-1])
    gpu_tools = {"nvidia-smi", "rocm-smi"}  # a GPU machine's probes: hardware.json needs them
    assert [argv for argv in started if argv[0] not in gpu_tools] == []


def test_httpx_still_works_without_its_cli_module():
    code = "import benchpack, httpx\nassert httpx.Client and httpx.Timeout(1.0)\nassert callable(httpx.main)"
    assert imported_by(code) == []


# The whole command in a fresh interpreter: benchpack.cli.main as the console script calls it, then what
# it left in sys.modules. A command that exits (SystemExit) still reports.
CLI_PROBE = """
import json, sys
from benchpack.cli import main
for argv in {argvs!r}:
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    if code:
        raise SystemExit(f"benchpack {{argv[0]}} exited {{code}}")
print(json.dumps([m for m in {heavy!r} if sys.modules.get(m) is not None]))
"""


def cli_imports(*argvs: list[str], names: tuple[str, ...] = HEAVY) -> tuple[list[str], str]:
    done = subprocess.run([sys.executable, "-c", CLI_PROBE.format(argvs=[list(map(str, a)) for a in argvs],
                                                                   heavy=names)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]), "\n".join(lines[:-1])


@pytest.fixture(scope="module")
def server():
    with RefServer(responses=["Paris is the capital."], ttft_s=0.002, itl_s=0.001) as srv:
        yield srv


@pytest.fixture(scope="module")
def two_runs(server, tmp_path_factory):
    """Two result dirs of two cases x 4 repetitions: enough rows for bands and verdicts."""
    root = tmp_path_factory.mktemp("imports")
    pack = write_pack(root / "pack", [chat_case("alpha"), chat_case("beta", "Say Rome.")], repetitions=4, stream=True)
    outs = [root / "first", root / "second"]
    runs = [["run", pack, "--adapter", "openai-chat", "--model", "ref", "--endpoint", server.url, "--out", out]
            for out in outs]
    loaded, printed = cli_imports(*runs)
    return outs, loaded, printed


def test_a_whole_run_with_its_summary_imports_nothing_heavy(two_runs):
    _, loaded, printed = two_runs
    assert "±" in printed, f"the end-of-run summary printed no bands, so the bands' path was not run:\n{printed}"
    assert loaded == []


# Not imported by a whole run against the scripted endpoint, summary included (h39e): each was on the path and
# cost CPU on every short run. statistics (with fractions): stats computes its medians itself; subprocess
# (with signal): only a GPU probe or powermetrics starts a process; the measuring proxy: only repo-task runs;
# plausibility (its chip table and patterns): a scripted endpoint's figures are not judged; traceback: only
# when an adapter raises. The row contract's Structs (benchpack.results.contract): a row needs only their keys
# (benchpack.results.row_keys); secrets (with hmac and base64): the cold prompt's nonce is os.urandom's hex (h40d).
# encodings.idna (with stringprep and unicodedata): an ASCII host is looked up as the bytes the codec would make
# (wire.lookup_host, h41e). hashlib (with OpenSSL's _hashlib): the case's sha256 is CPython's own (benchpack.digest,
# h42a).
NOT_IN_A_SCRIPTED_RUN = ("statistics", "fractions", "signal", "subprocess", "benchpack.agents.proxy",
                         "benchpack.results.plausibility", "traceback", "benchpack.results.contract", "secrets",
                         "hmac", "encodings.idna", "stringprep", "unicodedata", "hashlib", "_hashlib")


def test_a_whole_scripted_run_with_its_summary_leaves_out_what_it_does_not_use(server, tmp_path):
    import shutil

    pack = write_pack(tmp_path / "pack", [chat_case("alpha")], repetitions=3, stream=True)
    loaded, printed = cli_imports(["run", pack, "--adapter", "openai-chat", "--model", "ref", "--endpoint",
                                   server.url, "--out", tmp_path / "out"], names=NOT_IN_A_SCRIPTED_RUN)
    assert "Scripted endpoint" in printed, printed[-2000:]  # the summary ran, and judged nothing
    if any(shutil.which(tool) for tool in ("nvidia-smi", "rocm-smi")):  # a GPU machine's probe starts them
        loaded = [m for m in loaded if m not in ("signal", "subprocess")]
    assert loaded == []


@pytest.mark.parametrize("command", [["compare"], ["compare", "--json"], ["report"], ["report", "--json"]])
def test_compare_and_report_import_nothing_heavy(two_runs, command):
    outs, _, _ = two_runs
    loaded, printed = cli_imports([*command, *outs])
    # A verdict needs the bootstrap, so the bands' path ran (text: "within the noise", JSON: "within-noise").
    assert re.search(r"(within|outside)[ -](the )?noise", printed), printed[-2000:]
    assert loaded == []


# A plain http:// run sends through benchpack.adapters.wire and never imports httpx (with ssl, email, idna,
# http.cookiejar: about 0.13 s of CPU, as much as a 16-stream run's whole request work).
WIRE_ONLY = ("httpx", "httpcore", "ssl")


def _watched_run(tmp_path, endpoint: str, *, cli: bool, client: str = "None") -> dict:
    """A subprocess runs a one-case pack against `endpoint` (through the CLI, or run_pack with `client`
    injected) and says which of WIRE_ONLY it imported by the end of run_pack and by the end of the process."""
    from tests.run.test_runner_support import chat_case, write_pack

    pack = write_pack(tmp_path / "pack", [chat_case("one"), chat_case("two")], repetitions=2, stream=True)
    out = tmp_path / "out"
    call = (f"rc = main(['run', {str(pack)!r}, '--adapter', 'openai-chat', '--model', 'ref', '--endpoint', "
            f"{endpoint!r}, '--out', {str(out)!r}, '--host-label', 'h'])" if cli else
            f"from benchpack.packs.loader import load_pack\nfrom benchpack.adapters import get_adapter\n"
            f"client = {client}\n"
            f"outcome = runner.run_pack(load_pack({str(pack)!r}), runner.RunOptions(adapter='openai-chat', "
            f"model='ref', endpoint={endpoint!r}, out={str(out)!r}, host_label='h', run_metadata=None, "
            f"probe_server=True), adapter=get_adapter('openai-chat', client), probe_client=client)\nrc = 0")
    code = (f"import json, sys\nfrom benchpack.run import runner\nfrom benchpack.cli import main\n"
            f"seen = {{}}\nrun_pack = runner.run_pack\n"
            f"def watched(*args, **kwargs):\n    outcome = run_pack(*args, **kwargs)\n"
            f"    seen['run'] = [m for m in {WIRE_ONLY!r} if m in sys.modules]\n    return outcome\n"
            f"runner.run_pack = watched\n{call}\n"
            f"print(json.dumps({{'rc': rc, 'run': seen['run'], "
            f"'process': [m for m in {WIRE_ONLY!r} if m in sys.modules]}}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    rows = [json.loads(line) for line in (out / "run.jsonl").read_text().splitlines()]
    report["errors"] = [row.get("error") for row in rows]
    return report


def test_a_run_against_an_http_endpoint_never_imports_httpx(tmp_path):
    from benchpack.refserver.server import RefServer

    with RefServer(ttft_s=0.002, itl_s=0.001, default_tokens=4, models=["ref"]) as srv:
        through_cli = _watched_run(tmp_path / "cli", srv.openai_url, cli=True)
        request_path = _watched_run(tmp_path / "runner", srv.openai_url, cli=False)
    assert through_cli["rc"] == 0 and through_cli["errors"] == [None] * 4
    assert "httpx" not in through_cli["process"] and "httpcore" not in through_cli["process"]
    # The requests and probes need no ssl either. (The CLI may still import it for other reasons: the run
    # summary's reporting modules import xml.sax.saxutils, which imports urllib.request.)
    assert request_path["errors"] == [None] * 4 and request_path["run"] == []


def test_an_injected_httpx_client_or_an_https_endpoint_still_takes_the_httpx_path(tmp_path):
    from benchpack.refserver.server import RefServer

    with RefServer(ttft_s=0.002, itl_s=0.001, default_tokens=4, models=["ref"]) as srv:
        injected = _watched_run(tmp_path / "injected", srv.openai_url, cli=False,
                                client="__import__('benchpack.adapters.transport').adapters.transport.make_client()")
    assert injected["errors"] == [None] * 4 and "httpx" in injected["run"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    https = _watched_run(tmp_path / "https", f"https://127.0.0.1:{port}/v1", cli=True)
    assert "httpx" in https["run"] and "ssl" in https["run"]
    assert all(error.startswith(f"cannot connect to https://127.0.0.1:{port}/v1/chat/completions: ")
               for error in https["errors"])


def test_the_run_s_modules_are_frozen_for_the_run_and_unfrozen_after_it(server, tmp_path):
    """`benchpack run` imports its modules, the chosen adapter's among them, with the cyclic collector off
    and freezes them (h40d, h41e): the collections during the run never scan them again. The collector is
    on during the run, off for the closing table, and the command leaves it as it found it, nothing frozen."""
    pack = write_pack(tmp_path / "pack", [chat_case("alpha")], repetitions=2, stream=True)
    code = f"""
import gc, json, sys
from benchpack.cli import main
seen = {{}}
import benchpack.run.runner as runner
import benchpack.commands.run as command
real, real_summary = runner.run_pack, command.print_summary
def watched(*args, **kwargs):
    seen["frozen"], seen["enabled"] = gc.get_freeze_count(), gc.isenabled()
    adapter = sys.modules.get("benchpack.adapters.openai_chat")
    seen["adapter"] = adapter is not None and not any(o is adapter.__dict__ for o in gc.get_objects())
    return real(*args, **kwargs)
def summary(*args, **kwargs):
    seen["summary_enabled"] = gc.isenabled()
    return real_summary(*args, **kwargs)
runner.run_pack, command.print_summary = watched, summary
before = gc.get_freeze_count()
rc = main(["run", {str(pack)!r}, "--adapter", "openai-chat", "--model", "ref", "--endpoint", {server.url!r},
           "--out", {str(tmp_path / "out")!r}])
print(json.dumps({{"rc": rc, "before": before, "during": seen["frozen"], "enabled": seen["enabled"],
                  "adapter_frozen": seen["adapter"], "summary_enabled": seen["summary_enabled"],
                  "after": gc.get_freeze_count(), "enabled_after": gc.isenabled()}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["rc"] == 0 and report["before"] == 0
    assert report["during"] > 5000 and report["enabled"] is True  # the imported modules' objects, frozen
    assert report["adapter_frozen"] is True  # imported before the freeze: gc.get_objects() no longer lists it
    assert report["summary_enabled"] is False
    assert report["after"] == 0 and report["enabled_after"] is True


# No class on the run path is a dataclass (h45a): in every process Python 3.11's dataclasses compile each class's
# generated methods from source text (exec), ~0.4 ms a class, 40 classes and ~17 ms of a run's CPU. The run path's
# records are msgspec Structs (built in C) or written out (benchpack.errors.Problem): docs/measurement.md,
# "Issue 34 item 2: stop 43". `dataclasses._process_class` is what @dataclass calls for each class, watched here
# from before the first import to the end of the command.
DATACLASS_PROBE = """
import dataclasses, json, sys
made = []
real = dataclasses._process_class
def watched(cls, *args, **kwargs):
    made.append(f"{{cls.__module__}}.{{cls.__qualname__}}")
    return real(cls, *args, **kwargs)
dataclasses._process_class = watched
from benchpack.cli import main
rc = main({argv!r})
print(json.dumps({{"rc": rc, "made": made}}))
"""


@pytest.mark.parametrize("lanes", ["base", "concurrency"])
def test_a_whole_run_creates_no_dataclass(server, tmp_path, lanes):
    """As bench/sidebyside.py runs it: a cold-prompt stream, warm-up, the base case or a concurrency lane."""
    concurrency = '[lanes.concurrency]\nlevels = [4]\nrequests = 8\ncases = ["alpha"]\n'
    pack = write_pack(tmp_path / "pack", [chat_case("alpha")], warmup=1, repetitions=4, stream=True,
                      scoring='[scoring]\nmode = "none"\n', extra=concurrency)
    argv = ["run", str(pack), "--adapter", "openai-chat", "--model", "ref", "--endpoint", server.url,
            "--out", str(tmp_path / "out"), "--lanes", lanes]
    done = subprocess.run([sys.executable, "-c", DATACLASS_PROBE.format(argv=argv)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    rows = (tmp_path / "out" / "run.jsonl").read_text().splitlines()
    assert report["rc"] == 0 and len(rows) == (4 if lanes == "base" else 8), done.stdout[-2000:]
    assert report["made"] == []
