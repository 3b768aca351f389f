"""Hostile bundles and archives (tests/hostile.py): each one must be rejected
with its expected code, without a crash, without a file written outside the
target, and without the secret it carries appearing in any output."""

import json

import pytest

from benchpack.bundles.archives import ArchiveError, ArchiveLimits, safe_extract
from benchpack.bundles.validate import validate_bundle
from benchpack.cli import main
from tests.hostile import hostile_cases, snapshot, template_bundle

CASES = hostile_cases()


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return template_bundle(tmp_path_factory.mktemp("template"))


def test_it_has_a_corpus_of_at_least_200_distinct_hostile_inputs():
    assert len(CASES) >= 200
    assert len({case.id for case in CASES}) == len(CASES)
    assert {case.kind for case in CASES} == {"bundle", "archive"}


def test_it_starts_every_bundle_case_from_a_valid_template(template):
    assert validate_bundle(template).ok


@pytest.mark.slow  # ~340 cases; each is fast, together they take tens of seconds on a busy machine
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_it_rejects_the_hostile_input_safely(case, template, tmp_path, capsys):
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    target = case.build(sandbox, template)
    before = snapshot(tmp_path)
    if case.kind == "bundle":
        report = validate_bundle(target, case.bundle_limits)
        codes = [finding.code for finding in report.findings]
        assert not report.ok
        assert case.expected in codes, codes
        assert "check.internal-error" not in codes
        rendered = json.dumps(report.to_dict())  # JSON-serializable, and nothing echoed
        outputs = [rendered]
        if case.bundle_limits is None:
            # The CLI's text and JSON renderings must not leak either.
            for extra in (["--json"], []) if case.secret else (["--json"],):
                assert main(["registry", "bundle", "validate", str(target), *extra]) == 1
            captured = capsys.readouterr()
            outputs += [captured.out, captured.err]
    else:
        with pytest.raises(ArchiveError) as caught:
            safe_extract(target, sandbox / "out", case.archive_limits or ArchiveLimits())
        assert caught.value.code == case.expected
        outputs = [str(caught.value), caught.value.message]
        if case.archive_limits is None:
            exit_code = main(["registry", "bundle", "unpack", str(target), "--out", str(sandbox / "out")])
            assert exit_code in (1, 2)
            captured = capsys.readouterr()
            assert case.expected in captured.err
            outputs += [captured.out, captured.err]
    assert snapshot(tmp_path) == before, "something was written or removed"
    if case.secret:
        assert all(case.secret not in output for output in outputs)
