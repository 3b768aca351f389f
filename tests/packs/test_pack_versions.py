"""Each bundled pack's content is held to its version (benchpacks/VERSIONS.lock),
and no bundled pack reuses an id+version the seed format published for a
different workload."""

from __future__ import annotations

import shutil

import pytest

from benchpack.packs import lock as pack_lock
from benchpack.packs.loader import bundled_packs_dir, load_pack

BUNDLED = [p.name for p in pack_lock.bundled_pack_dirs()]


def seed_versions() -> dict[tuple[str, str], str]:
    from benchpack.packs import catalogue

    return catalogue.seed_versions()


def test_every_bundled_packs_content_matches_its_locked_version():
    assert pack_lock.problems() == []


@pytest.mark.parametrize("pack_dir", BUNDLED)
def test_no_bundled_pack_reuses_a_seed_id_and_version_for_another_workload(pack_dir):
    pack = load_pack(bundled_packs_dir() / pack_dir)
    assert seed_versions().get((pack.id, pack.version), "same") == "same", (
        f"{pack.id} {pack.version} is the seed format's id+version for a different or unknown workload; give it "
        "a version of its own (docs/packs.md)")


@pytest.fixture
def packs_copy(tmp_path):
    root = tmp_path / "benchpacks"
    root.mkdir()
    for name in ("smoke-chat", "desktop-django-wrap"):
        shutil.copytree(bundled_packs_dir() / name, root / name)
    pack_lock.update(["smoke-chat", "desktop-django-wrap"], root)
    assert pack_lock.problems(root) == []
    return root


def test_a_changed_prompt_without_a_version_bump_is_caught(packs_copy):
    manifest = packs_copy / "smoke-chat" / "benchpack.toml"
    manifest.write_text(manifest.read_text().replace("Answer in one sentence.", "Answer briefly."))
    [problem] = pack_lock.problems(packs_copy)
    assert problem.startswith("smoke-chat 0.1.0: its content changed but its version did not")
    manifest.write_text(manifest.read_text().replace('version = "0.1.0"', 'version = "0.1.1"'))
    [problem] = pack_lock.problems(packs_copy)
    assert "version 0.1.0 -> 0.1.1 and its content changed" in problem
    pack_lock.update(["smoke-chat"], packs_copy)
    assert pack_lock.problems(packs_copy) == []


def test_a_changed_fixture_or_prompt_assembly_changes_the_hash_but_the_readme_does_not(packs_copy, monkeypatch):
    pack = packs_copy / "desktop-django-wrap"
    before = pack_lock.content_hash(pack)
    (pack / "README.md").write_text("reworded\n")
    assert pack_lock.content_hash(pack) == before
    fixture = pack / "fixtures" / "synthetic-django-app.md"
    fixture.write_text(fixture.read_text() + "one more line\n")
    assert pack_lock.content_hash(pack) != before
    fixture.write_text(fixture.read_text().removesuffix("one more line\n"))
    assert pack_lock.content_hash(pack) == before
    # The loader's prompt assembly is part of the workload too.
    from benchpack.packs import loader as packs
    monkeypatch.setattr(packs, "_append_fixture", lambda prompt, fixture, text: prompt + "\n\n\n" + text)
    assert pack_lock.content_hash(pack) != before


def test_line_endings_of_a_checkout_do_not_change_the_hash(packs_copy):
    manifest = packs_copy / "smoke-chat" / "benchpack.toml"
    before = pack_lock.content_hash(manifest.parent)
    manifest.write_bytes(manifest.read_bytes().replace(b"\n", b"\r\n"))
    assert pack_lock.content_hash(manifest.parent) == before


def test_the_lock_file_has_one_line_per_bundled_pack():
    lines = [line for line in pack_lock.lock_path().read_text().splitlines() if line and not line.startswith("#")]
    assert sorted(line.split()[0] for line in lines) == sorted(
        load_pack(bundled_packs_dir() / name).id for name in BUNDLED)


# ---------------------------------------------------------------- older released versions (issue 18)

from benchpack.errors import PackError  # noqa: E402
from benchpack.packs import catalogue  # noqa: E402
from benchpack.packs.loader import resolve_pack_path  # noqa: E402
from benchpack.run.scoring import check_runnable  # noqa: E402

OLDER = [v for v in catalogue.pack_versions() if not v.newest]
PREVIOUS_LOCK = bundled_packs_dir() / catalogue.PREVIOUS_DIR / "VERSIONS.lock"


def previous_lock() -> dict[tuple[str, str], str]:
    entries = {}
    for line in PREVIOUS_LOCK.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            pack_id, version, digest = line.split()
            entries[(pack_id, version)] = digest
    return entries


def test_older_versions_are_bundled_and_the_newest_is_the_top_level_one():
    assert {(v.id, v.version) for v in OLDER} >= {("runtime-sweep", "1.0.0"), ("endpoint-python-correctness", "0.2.0")}
    for older in OLDER:
        newest = catalogue.find(older.id)
        assert newest is not None and newest.path == bundled_packs_dir() / older.id
        assert catalogue.version_key(older.version) < catalogue.version_key(newest.version)


@pytest.mark.parametrize("entry", OLDER, ids=lambda v: f"{v.id}@{v.version}")
def test_every_older_version_loads_is_runnable_and_never_changes(entry):
    pack = load_pack(entry.path)
    assert (pack.id, pack.version) == (entry.id, entry.version)
    assert entry.path == bundled_packs_dir() / catalogue.PREVIOUS_DIR / pack.id / pack.version
    check_runnable(pack)
    assert previous_lock().get((pack.id, pack.version)) == pack_lock.content_hash(entry.path), (
        f"{pack.id} {pack.version} is a released version: its content must never change")
    assert seed_versions().get((pack.id, pack.version), "same") == "same"


def test_the_previous_lock_lists_exactly_the_older_versions():
    assert set(previous_lock()) == {(v.id, v.version) for v in OLDER}


def test_id_is_the_newest_version_and_id_at_version_any_other():
    assert resolve_pack_path("runtime-sweep") == bundled_packs_dir() / "runtime-sweep"
    assert load_pack(resolve_pack_path("runtime-sweep")).version == "1.1.0"
    assert load_pack(resolve_pack_path("runtime-sweep@1.0.0")).version == "1.0.0"
    assert resolve_pack_path("runtime-sweep@1.1.0") == bundled_packs_dir() / "runtime-sweep"
    with pytest.raises(PackError) as info:
        resolve_pack_path("runtime-sweep@9.9.9")
    assert info.value.lines() == ["runtime-sweep@9.9.9: no version 9.9.9 of bundled pack 'runtime-sweep' "
                                  "(bundled versions: 1.1.0, 1.0.0; `benchpack list --all`)"]


def test_list_shows_the_newest_and_list_all_every_version(capsys):
    from benchpack import cli

    assert cli.main(["list"]) == 0
    newest = capsys.readouterr().out
    assert "runtime-sweep 1.1.0 " in newest and "runtime-sweep@1.0.0" not in newest
    assert cli.main(["list", "--all"]) == 0
    every = capsys.readouterr().out.splitlines()
    assert any(line.startswith("runtime-sweep 1.1.0 ") for line in every)
    assert any(line.startswith("runtime-sweep@1.0.0 ") and "(older)" in line for line in every)
    assert len(every) == len(catalogue.pack_versions())


def test_version_order_is_numeric():
    assert catalogue.version_key("1.10.0") > catalogue.version_key("1.9.0") > catalogue.version_key("0.10.0")
