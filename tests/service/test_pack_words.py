"""A pack named in words a visitor recognises (issue 32 item 5): registry_site.catalogue.pack_words."""

import tomllib

import pytest

from benchpack.packs import catalogue
from registry_site.catalogue.pack_words import IMPORTED, TITLES, pack_words


def test_every_bundled_pack_has_a_title_and_a_kind_of_work():
    bundled = {v.id for v in catalogue.pack_versions()}
    assert len(bundled) >= 12
    untitled = sorted(bundled - set(TITLES))
    assert not untitled, f"bundled packs without a title in registry_site/catalogue/pack_words.py: {untitled}"
    for pack_id in bundled:
        words = pack_words(pack_id)
        assert words.title and words.kind and words.title != pack_id, pack_id
        assert words.label == f"{words.kind} · {words.title}"


def test_no_title_is_kept_for_a_pack_that_is_not_bundled():
    # a renamed or removed pack leaves its words behind here; they would name nothing
    assert set(TITLES) <= {v.id for v in catalogue.pack_versions()}


def test_the_description_is_the_bundled_manifests_own():
    for version in catalogue.newest_versions():
        manifest = tomllib.loads((version.path / catalogue.MANIFEST_NAME).read_text(encoding="utf-8"))
        assert pack_words(version.id).description == manifest["pack"]["description"]


@pytest.mark.parametrize("pack_id, kind, label", [
    ("imported-vllm", IMPORTED, "Imported results · Measured by vllm, not by Benchpack"),
    ("lanes-bench", "", "lanes-bench"),  # a pack the registry has no words for: its id, nothing invented
])
def test_a_pack_without_a_title_is_named_by_what_is_known(pack_id, kind, label):
    words = pack_words(pack_id)
    assert (words.kind, words.label) == (kind, label)
    assert words.description == ""
