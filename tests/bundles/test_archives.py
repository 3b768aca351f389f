import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchpack.bundles.archives import ArchiveError, ArchiveLimits, pack_archive, safe_extract
from benchpack.bundles.create import create_bundle, validate_bundle
from tests.hostile import REAL_RESULTS, snapshot, write_result_dir


@pytest.fixture
def bundle(tmp_path) -> Path:
    return create_bundle([write_result_dir(tmp_path / "src" / "run-a")], tmp_path / "bundle", "self-reported")


@pytest.mark.parametrize("suffix", [".tar.gz", ".tgz", ".zip"])
def test_it_round_trips_a_bundle_through_an_archive(tmp_path, bundle, suffix):
    archive = pack_archive(bundle, tmp_path / f"b{suffix}")
    out = safe_extract(archive, tmp_path / "unpacked")
    assert validate_bundle(out).ok
    originals = {p.relative_to(bundle): p.read_bytes() for p in bundle.rglob("*") if p.is_file()}
    copies = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert copies == originals


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_it_packs_deterministically(tmp_path, bundle, suffix):
    first = pack_archive(bundle, tmp_path / f"one{suffix}").read_bytes()
    (bundle / "bundle.json").touch()  # a newer mtime must not change the archive
    second = pack_archive(bundle, tmp_path / f"two{suffix}").read_bytes()
    assert first == second


def test_it_lists_members_in_sorted_order(tmp_path, bundle):
    with tarfile.open(pack_archive(bundle, tmp_path / "b.tar.gz")) as tar:
        names = tar.getnames()
    with zipfile.ZipFile(pack_archive(bundle, tmp_path / "b.zip")) as archive:
        zip_names = [name.rstrip("/") for name in archive.namelist()]
    assert names == zip_names
    assert "bundle.json" in names and names.index("bundle.json") < names.index("runs")


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_it_round_trips_the_real_results(tmp_path, suffix):
    bundle = create_bundle(sorted(REAL_RESULTS.iterdir()), tmp_path / "bundle", "self-reported")
    out = safe_extract(pack_archive(bundle, tmp_path / f"real{suffix}"), tmp_path / "unpacked")
    report = validate_bundle(out)
    assert report.ok, report.to_dict()


def test_it_refuses_an_existing_destination_without_touching_it(tmp_path, bundle):
    archive = pack_archive(bundle, tmp_path / "b.zip")
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "mine").write_text("keep")
    with pytest.raises(ArchiveError) as caught:
        safe_extract(archive, tmp_path / "dest")
    assert caught.value.code == "archive.destination-exists"
    assert (tmp_path / "dest" / "mine").read_text() == "keep"


def test_it_refuses_unknown_archive_names(tmp_path, bundle):
    with pytest.raises(ArchiveError) as caught:
        pack_archive(bundle, tmp_path / "b.rar")
    assert caught.value.code == "archive.unsupported-type"


def test_it_counts_real_bytes_when_a_zip_lies_about_sizes(tmp_path):
    archive = tmp_path / "liar.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("big.txt", b"0" * 3_000_000)
    raw = bytearray(archive.read_bytes())
    # Rewrite the declared uncompressed size in the central directory to 10 bytes.
    central = raw.rfind(b"PK\x01\x02")
    raw[central + 24 : central + 28] = (10).to_bytes(4, "little")
    archive.write_bytes(bytes(raw))
    before = snapshot(tmp_path)
    with pytest.raises(ArchiveError) as caught:
        safe_extract(archive, tmp_path / "out", ArchiveLimits(max_total_bytes=1_000_000))
    assert caught.value.code in {"archive.too-large", "archive.corrupt", "archive.compression-ratio"}
    assert snapshot(tmp_path) == before


def test_it_stops_a_gzip_bomb_while_streaming(tmp_path):
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w:gz") as tar:
        info = tarfile.TarInfo("zeros.bin")
        info.size = 50_000_000
        tar.addfile(info, io.BytesIO(b"\0" * info.size))
    archive = tmp_path / "bomb.tar.gz"
    archive.write_bytes(payload.getvalue())
    with pytest.raises(ArchiveError) as caught:
        safe_extract(archive, tmp_path / "out")
    assert caught.value.code == "archive.compression-ratio"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.tar.gz"]


pieces = st.sampled_from(["a", "b", "A", ".", "..", "/", "\\", "\x00", ":", "C:", "\u00e9", "e\u0301", "x" * 300])
names = st.lists(st.lists(pieces, min_size=1, max_size=8).map("".join), min_size=1, max_size=6)


@pytest.mark.filterwarnings("ignore:Duplicate name")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(member_names=names, use_zip=st.booleans())
def test_it_never_writes_outside_the_destination_for_any_member_names(tmp_path_factory, member_names, use_zip):
    sandbox = tmp_path_factory.mktemp("sandbox")
    archive = sandbox / ("a.zip" if use_zip else "a.tar.gz")
    if use_zip:
        with zipfile.ZipFile(archive, "w") as zf:
            for name in member_names:
                zf.writestr(zipfile.ZipInfo(name), b"x")
    else:
        with tarfile.open(archive, "w:gz") as tar:
            for name in member_names:
                info = tarfile.TarInfo(name)
                info.size = 1
                tar.addfile(info, io.BytesIO(b"x"))
    before = snapshot(sandbox)
    try:
        out = safe_extract(archive, sandbox / "out")
    except ArchiveError:
        assert snapshot(sandbox) == before
        return
    after = snapshot(sandbox)
    new = set(after) - set(before)
    assert all(path == "out" or path.startswith("out/") for path in new)
    for path in out.rglob("*"):
        assert not stat.S_ISLNK(path.lstat().st_mode)
