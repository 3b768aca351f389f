"""`benchpack export harbor`: every audit fixture of every exported case gets its expected reward through the
exported tests/test.sh, run at Harbor's paths (/app, /tests, /logs) inside bubblewrap with no network, in both
modes (agent: the fixture applied to /app; answer: the fixture as the agent's final reply, applied by the
exported test.sh itself with Benchpack's fenced-patch executor); the exported tasks pass `harbor lint --select
ALL`, parse with Harbor's models, and carry Harbor's own digests."""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from benchpack.cli import main
from benchpack.interop.harbor_export import exportable
from benchpack.packs.loader import load_pack, resolve_pack_path
from benchpack.repo_task.executors import external_agent_command, fenced_patch_text
from benchpack.selfcheck.audit import fixture_answer, load_audit
from tests.environment import needs
from tests.interop.tools import harbor_python, tool_missing

# django-dashboard-regression-fix and the Rust case of product-offer-matching are not exported (NOT_EXPORTED says why).
EXPORTED_PACKS = ["patch-from-failure", "python-regression-fix", "endpoint-python-correctness",
                  "mini-project-completion", "product-offer-matching"]
ANSWER_PACKS = EXPORTED_PACKS[:-1]  # product-offer-matching's case is external-agent: agent mode only
REPO = Path(__file__).resolve().parents[2]
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64")
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf", "localtime", "alternatives")


def _system_root() -> list[str]:
    """bwrap with nothing of the host but the system directories and a few /etc files, read-only, no network."""
    argv = ["bwrap", "--die-with-parent", "--unshare-all", "--new-session", "--tmpfs", "/"]
    for path in SYSTEM_DIRS:
        source = Path(path)
        if source.is_symlink():
            argv += ["--symlink", str(source.readlink()), path]
        elif source.is_dir():
            argv += ["--ro-bind", path, path]
    for name in ETC:
        if Path("/etc", name).exists():
            argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return argv


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("harbor")
    found = {}
    for pack in EXPORTED_PACKS:
        assert main(["export", "harbor", pack, "--out", str(root / pack)]) == 0
        found[pack] = root / pack
    return found


@pytest.fixture(scope="module")
def exported_answer(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("harbor-answer")
    found = {}
    for pack in ANSWER_PACKS:
        assert main(["export", "harbor", pack, "--mode", "answer", "--out", str(root / pack)]) == 0
        found[pack] = root / pack
    return found


def harbor_paths_run(test_dir: Path, app: Path | None, logs: Path, hide: tuple[str, ...] = (),
                     solution: Path | None = None, script: str = "/tests/test.sh") -> subprocess.CompletedProcess:
    """tests/test.sh as Harbor's separate verifier runs it: /app (the agent's copy; none in answer mode, whose
    verifier image has no /app), /tests read-only, /logs writable, nothing else of the host but the system
    directories (minus `hide`, each replaced by an empty non-executable file), no network."""
    argv = _system_root()
    for path in hide:
        argv += ["--ro-bind", "/dev/null", path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", *(["--bind", str(app), "/app"] if app else []),
             "--ro-bind", str(test_dir), "/tests", "--bind", str(logs), "/logs", "--chdir", "/",
             *(["--ro-bind", str(solution), "/solution"] if solution else []),
             "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp",
             "--", "/bin/sh", script]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


def run_fixture_agent(agent: Path, case_id: str, app: Path, private: Path) -> subprocess.CompletedProcess:
    """An audit agent script (a cheat among them) as Harbor's agent: it may write only the repository it works
    on (and its own scratch); the checkout, whose pack holds the holdout labels the verifier reads, is read-only
    to it (in Harbor those are not in the agent's container at all)."""
    private.mkdir()
    (private / "context.json").write_text("{}")
    argv = _system_root()
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--ro-bind", str(REPO), str(REPO),
             "--bind", str(app), str(app), "--bind", str(private), str(private), "--chdir", str(private),
             "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", str(private), "--",
             *external_agent_command(["/usr/bin/python3", str(agent)], workspace=app, case_id=case_id, out=private,
                                     repetition=1, context=private / "context.json")]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600)


def audit_params(packs=EXPORTED_PACKS, mode="agent") -> list:
    params = []
    for pack_id in packs:
        pack = load_pack(resolve_pack_path(pack_id))
        cases = {case.id for case in exportable(pack, mode)}
        for fixture in load_audit(pack):
            if fixture.case_id in cases:
                params.append(pytest.param(pack_id, fixture.case_id, fixture.id, id=f"{pack_id}:{fixture.case_id}:{fixture.id}"))
    return params


@pytest.mark.bubblewrap
@pytest.mark.slow
@pytest.mark.parametrize("pack_id,case_id,fixture_id", audit_params())
def test_every_audit_fixture_gets_its_expected_reward_through_the_exported_test_sh(
        exported, pack_id, case_id, fixture_id, tmp_path):
    pack = load_pack(resolve_pack_path(pack_id))
    fixture = next(f for f in load_audit(pack) if f.case_id == case_id and f.id == fixture_id)
    case = next(c for c in pack.cases if c.id == case_id)
    task = exported[pack_id] / f"{pack_id}__{case_id}"
    # /app as the agent would leave it: the repo fixture with the fixture's answer applied by Benchpack's
    # own fenced-patch executor (an answer it refuses leaves /app unchanged, as in `benchpack run`).
    app = tmp_path / "app"
    shutil.copytree(task / "environment" / "repo", app, symlinks=True)
    if fixture.agent:  # an external-agent case: the fixture's agent script edits /app, as Harbor's agent would
        run_fixture_agent(fixture.agent, case_id, app, tmp_path / "agent")
    else:
        fenced_patch_text(app, fixture_answer(pack, fixture), 60.0)
    logs = tmp_path / "logs"
    logs.mkdir()
    done = harbor_paths_run(task / "tests", app, logs)
    reward = (logs / "verifier" / "reward.txt")
    assert reward.is_file(), f"no reward (exit {done.returncode}): {done.stderr[-2000:]}"
    expected = "1" if fixture.expected == "pass" else "0"
    assert reward.read_text().strip() == expected, (fixture.expected, done.stdout[-2000:])
    per_check = json.loads((logs / "verifier" / "reward.json").read_text())
    assert all(isinstance(v, int) and v in (0, 1) for v in per_check.values())  # Harbor: numbers only
    if fixture.expected == "fail" and fixture.failed_check:
        failed = [name for name, value in per_check.items() if value == 0 and name != "reward"]
        assert fixture.failed_check in failed, (fixture.failed_check, per_check)
    assert done.returncode == 0
    assert not (app / ".git").exists()


def answer_logs(tmp_path: Path, answer: str | None) -> Path:
    """/logs as Harbor's separate verifier sees it in answer mode: the agent's convention artifact directory
    (re-created from the agent's container), holding the final reply when the agent wrote one."""
    logs = tmp_path / "logs"
    (logs / "artifacts").mkdir(parents=True)
    if answer is not None:
        (logs / "artifacts" / "answer.md").write_text(answer, encoding="utf-8")
    return logs


def rewards(logs: Path) -> tuple[str | None, dict | None]:
    text, per_check = logs / "verifier" / "reward.txt", logs / "verifier" / "reward.json"
    return (text.read_text().strip() if text.is_file() else None,
            json.loads(per_check.read_text()) if per_check.is_file() else None)


@pytest.mark.bubblewrap
@pytest.mark.slow
@pytest.mark.parametrize("pack_id,case_id,fixture_id", audit_params(ANSWER_PACKS, "answer"))
def test_answer_mode_scores_every_audit_fixture_as_benchpack_run_does(
        exported_answer, pack_id, case_id, fixture_id, tmp_path):
    """The fixture is the agent's final reply; the exported test.sh applies it itself (Benchpack's executor,
    shipped in tests/, running on the system Python alone: the project's environment is not in the sandbox)."""
    pack = load_pack(resolve_pack_path(pack_id))
    fixture = next(f for f in load_audit(pack) if f.case_id == case_id and f.id == fixture_id)
    task = exported_answer[pack_id] / f"{pack_id}__{case_id}__answer"
    logs = answer_logs(tmp_path, fixture_answer(pack, fixture))
    done = harbor_paths_run(task / "tests", None, logs)
    reward, per_check = rewards(logs)
    assert reward is not None, f"no reward (exit {done.returncode}): {done.stderr[-2000:]}"
    assert reward == ("1" if fixture.expected == "pass" else "0"), (fixture.expected, done.stdout[-2000:])
    assert all(isinstance(v, int) and v in (0, 1) for v in per_check.values())
    if fixture.expected == "fail" and fixture.failed_check:
        assert fixture.failed_check in [k for k, v in per_check.items() if v == 0 and k != "reward"], per_check
    assert done.returncode == 0
    # what the executor did is kept beside the verdict, as `benchpack run` keeps task/ and patch/ logs
    assert (logs / "verifier" / "apply.stdout.log").is_file() and (logs / "verifier" / "answer.diff").is_file()


@pytest.mark.bubblewrap
@pytest.mark.parametrize("mode", ["agent", "answer"])
def test_harbors_oracle_solution_scores_1_on_every_exported_task(mode, exported, exported_answer, tmp_path):
    """What `harbor run -a oracle` does, at Harbor's paths without a container: solution/solve.sh in the agent's
    environment (/app, /solution, /logs/artifacts), then tests/test.sh in the verifier's: reward 1 everywhere."""
    roots = exported if mode == "agent" else exported_answer
    tasks = [task for root in roots.values() for task in sorted(root.iterdir()) if task.is_dir()]
    assert len(tasks) == (6 if mode == "agent" else 5)
    for task in tasks:
        work = tmp_path / task.name
        app = work / "app"
        shutil.copytree(task / "environment" / "repo", app, symlinks=True)
        logs = work / "logs"
        (logs / "artifacts").mkdir(parents=True)
        solved = harbor_paths_run(task / "tests", app, logs, solution=task / "solution", script="/solution/solve.sh")
        assert solved.returncode == 0, (task.name, solved.stderr[-2000:])
        done = harbor_paths_run(task / "tests", app if mode == "agent" else None, logs)
        assert rewards(logs)[0] == "1", (task.name, done.stdout[-2000:], done.stderr[-2000:])


@pytest.mark.bubblewrap
def test_answer_mode_scores_the_reply_not_app_and_a_missing_reply_scores_zero(exported_answer, tmp_path):
    pack = load_pack(resolve_pack_path("patch-from-failure"))
    task = exported_answer["patch-from-failure"] / "patch-from-failure__fix-split-bill__answer"
    good = next(f for f in load_audit(pack) if f.case_id == "fix-split-bill" and f.expected == "pass")
    # /app fixed by the agent's edits, but the reply is prose without a diff: the reply is what is scored
    app = tmp_path / "app"
    shutil.copytree(task / "environment" / "repo", app)
    fenced_patch_text(app, fixture_answer(pack, good), 60.0)
    logs = answer_logs(tmp_path / "a", "I fixed it in /app.")
    done = harbor_paths_run(task / "tests", app, logs)
    assert rewards(logs)[0] == "0" and done.returncode == 0
    assert "No fenced diff or patch block" in (logs / "verifier" / "apply.stderr.log").read_text()
    # no reply at all (the artifact directory arrived, empty): the agent's outcome, scored 0
    logs = answer_logs(tmp_path / "b", None)
    done = harbor_paths_run(task / "tests", None, logs)
    assert rewards(logs)[0] == "0" and done.returncode == 0
    assert "no reply" in (logs / "verifier" / "apply.stderr.log").read_text()
    # a good reply scores 1 with nothing at /app
    logs = answer_logs(tmp_path / "c", fixture_answer(pack, good))
    harbor_paths_run(task / "tests", None, logs)
    assert rewards(logs)[0] == "1"


@pytest.mark.bubblewrap
def test_answer_mode_infrastructure_faults_write_no_reward(exported_answer, tmp_path):
    """Not the answer's fault, so not a 0: no artifact directory reached the verifier; git cannot run (the
    executor's infrastructure error); the pristine fixture is gone."""
    pack = load_pack(resolve_pack_path("patch-from-failure"))
    task = exported_answer["patch-from-failure"] / "patch-from-failure__fix-split-bill__answer"
    good = fixture_answer(pack, next(f for f in load_audit(pack) if f.case_id == "fix-split-bill" and f.expected == "pass"))
    no_artifacts = tmp_path / "none" / "logs"
    no_artifacts.mkdir(parents=True)
    no_git = answer_logs(tmp_path / "git", good)
    no_fixture = answer_logs(tmp_path / "fixture", good)
    tests = tmp_path / "tests"
    shutil.copytree(task / "tests", tests)
    shutil.rmtree(tests / "pack" / "fixtures")  # the verifier's pristine copy is gone
    git = shutil.which("git", path="/usr/bin:/bin")
    for logs, done in ((no_artifacts, harbor_paths_run(task / "tests", None, no_artifacts)),
                       (no_git, harbor_paths_run(task / "tests", None, no_git, hide=(git,))),
                       (no_fixture, harbor_paths_run(tests, None, no_fixture))):
        assert done.returncode != 0, done.stdout
        assert rewards(logs) == (None, None), (logs, done.stderr[-2000:])
    assert "git" in harbor_paths_run(task / "tests", None, answer_logs(tmp_path / "again", good), hide=(git,)).stderr


@pytest.mark.bubblewrap
def test_an_infrastructure_fault_writes_no_reward(exported, tmp_path):
    """A verifier that cannot see real evidence (no /app) must not score 0: no reward file, non-zero exit."""
    task = exported["patch-from-failure"] / "patch-from-failure__fix-split-bill"
    app = tmp_path / "app"
    app.mkdir()
    (app / "unrelated.txt").write_text("x")
    tests = tmp_path / "tests"
    shutil.copytree(task / "tests", tests)
    shutil.rmtree(tests / "pack" / "fixtures")  # the pristine fixture is gone: evidence error
    logs = tmp_path / "logs"
    logs.mkdir()
    done = harbor_paths_run(tests, app, logs)
    assert done.returncode != 0
    assert not (logs / "verifier" / "reward.txt").exists() and not (logs / "verifier" / "reward.json").exists()


def test_export_writes_the_task_layout_and_nothing_into_app(exported, exported_answer):
    for pack_id, root in [*exported.items(), *exported_answer.items()]:
        dataset = tomllib.loads((root / "dataset.toml").read_text())
        answer = root in exported_answer.values()
        assert dataset["dataset"]["name"] == f"benchpack/{pack_id}" + ("-answer" if answer else "")
        for entry in dataset["tasks"]:
            task = root / entry["name"].split("/", 1)[1].replace(".", "__")
            for name in ("task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh"):
                assert (task / name).is_file(), (task, name)
            config = tomllib.loads((task / "task.toml").read_text())
            assert config["verifier"]["environment_mode"] == "separate"
            assert config["verifier"]["network_mode"] == config["environment"]["network_mode"] == "no-network"
            assert config["agent"]["user"] != "root" and "@sha256:" in (task / "environment/Dockerfile").read_text()
            assert not (task / "environment" / "repo" / ".git").exists()
            assert config["metadata"]["benchpack_mode"] == ("answer" if answer else "agent")
            if answer:  # the verifier's own image: pinned base, git baked in, the tests copied in
                verifier_image = (task / "tests" / "Dockerfile").read_text()
                assert verifier_image.startswith("FROM python:3.11-slim@sha256:") and "git" in verifier_image
                assert "artifacts" not in config  # nothing of /app travels: only the reply is scored
                assert "/logs/artifacts/answer.md" in (task / "instruction.md").read_text()
            else:
                assert config["artifacts"] == ["/app"]


def test_a_case_the_image_cannot_verify_is_not_exported_and_the_refusal_says_why(tmp_path, capsys):
    assert main(["export", "harbor", "django-dashboard-regression-fix", "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert "does not declare Django" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "d").exists()
    assert main(["export", "harbor", "product-offer-matching", "--mode", "answer", "--out", str(tmp_path / "o")]) == 2
    assert "no repo-task case with a fenced-patch harness" in capsys.readouterr().err
    pack = load_pack(resolve_pack_path("product-offer-matching"))
    assert [c.id for c in exportable(pack, "agent")] == ["cluster-offers-python"]  # Rust needs a toolchain


def test_export_refuses_a_pack_without_repo_tasks_and_an_existing_out(tmp_path, capsys):
    assert main(["export", "harbor", "runtime-sweep", "--out", str(tmp_path / "x")]) == 2
    assert "no repo-task case" in capsys.readouterr().err and not (tmp_path / "x").exists()
    (tmp_path / "y").mkdir()
    assert main(["export", "harbor", "patch-from-failure", "--out", str(tmp_path / "y")]) == 2
    assert "already exists" in capsys.readouterr().err


@pytest.mark.slow
@needs(lambda: tool_missing("harbor") is None, "needs Harbor's pinned venv: bash scripts/interop-tools.sh")
def test_harbor_lints_parses_and_digests_the_exported_tasks_as_we_do(exported, exported_answer):
    """Harbor 0.25.0's own `harbor lint --select ALL`, Task model and Packager digest, in its own venv; in answer
    mode Harbor resolves the verifier's environment to the bundled tests/ image."""
    python = harbor_python()
    for root in [*exported.values(), *exported_answer.values()]:
        tasks = sorted(p for p in root.iterdir() if p.is_dir())
        lint = subprocess.run([str(python.parent / "harbor"), "lint", "--select", "ALL", "--json", *map(str, tasks)],
                              capture_output=True, text=True, timeout=120)
        assert lint.returncode == 0 and json.loads(lint.stdout or "[]") == [], lint.stdout + lint.stderr
        probe = (
            "import json, sys, tomllib\nfrom pathlib import Path\n"
            "from harbor.models.task.task import Task\nfrom harbor.publisher.packager import Packager\n"
            "from harbor.models.dataset.manifest import DatasetManifest\n"
            "from harbor.models.task.verifier_mode import resolve_verifier_environment_definition\n"
            "root = Path(sys.argv[1])\n"
            "manifest = DatasetManifest.model_validate(tomllib.loads((root / 'dataset.toml').read_text()))\n"
            "out = {}\n"
            "for ref in manifest.tasks:\n"
            "    task = root / ref.name.split('/', 1)[1].replace('.', '__')\n"
            "    loaded = Task(task)\n"
            "    config = loaded.config\n"
            "    verifier = resolve_verifier_environment_definition(config, loaded.paths)\n"
            "    out[ref.name] = [ref.digest, 'sha256:' + Packager.compute_content_hash(task)[0],\n"
            "                     config.verifier.environment_mode.value, config.schema_version,\n"
            "                     verifier.directory.name, verifier.bundled_tests]\n"
            "print(json.dumps(out))\n")
        done = subprocess.run([str(python), "-c", probe, str(root)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        for name, (ours, harbors, mode, schema, verifier_dir, bundled) in json.loads(done.stdout).items():
            assert ours == harbors, name
            assert (mode, schema) == ("separate", "1.4")
            answer = name.endswith(".answer")
            assert (verifier_dir, bundled) == (("tests", True) if answer else ("environment", False)), name
