"""An implausible submission: validated, shown with its factor, refused at approval until an
operator records a written override (an event); then published with its verdict on every row."""

from __future__ import annotations

import json
import shutil

import pytest
from django.core import mail

from registry_site.catalogue.models import PublishedRow, PublishedRun
from submissions import states
from submissions.review import PLAUSIBILITY_OVERRIDE, DecisionError, approve, override_plausibility
from tests.data_paths import REAL_RESULTS

pytestmark = pytest.mark.django_db

LAPTOP = "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz"


@pytest.fixture
def fabricated(tmp_path, bundle_archive, submit, django_capture_on_commit_callbacks):
    """The seed's smoke run, re-labelled: a 7B Q4 model on a laptop CPU decoding at 50,000 tok/s."""
    name = "fabricated-laptop"
    source = tmp_path / "results" / name
    shutil.copytree(REAL_RESULTS / "2026-04-29-llama-server-smoke", source)
    rows = [json.loads(line) for line in (source / "run.jsonl").read_text().splitlines() if line.strip()]
    for row in rows:
        row["model"] = "llama-2-7b-chat.Q4_K_M.gguf"
        row["timing"].update(tpot_s=1 / 50_000, decode_tps=50_000.0)
    (source / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (source / "hardware.json").write_text(json.dumps({"cpu_model": LAPTOP, "cpu_count": 8, "gpus": []}))
    (source / "run-metadata.json").write_text(json.dumps(
        {"runtime": {"name": "llama-server"}, "model": {"served": "llama-2-7b-chat.Q4_K_M.gguf",
                                                        "quantization": "Q4_K_M"}}))
    with django_capture_on_commit_callbacks(execute=True):
        submission = submit(bundle_archive(name))
    submission.refresh_from_db()
    mail.outbox.clear()
    return submission


def test_validation_names_the_factor_and_keeps_the_bundle_reviewable(fabricated):
    assert fabricated.state == states.QUARANTINED  # well-formed: an operator sees it
    [finding] = [f for f in fabricated.validation_report["findings"] if f["code"] == "plausibility.implausible"]
    assert finding["severity"] == "warning"
    assert "decode 1,243× the bandwidth limit of Intel Core" in finding["message"]
    verdict = fabricated.validation_report["plausibility"]["fabricated-laptop"]["verdict"]
    assert verdict["status"] == "implausible" and verdict["factor"] == pytest.approx(1243, rel=1e-3)


def test_approval_is_refused_until_an_operator_overrides_in_writing(fabricated, operator, client):
    with pytest.raises(DecisionError, match="implausible.*decode 1,243×.*written override"):
        approve(fabricated.pk, operator)
    assert not PublishedRun.objects.exists()
    with pytest.raises(DecisionError, match="written reason"):
        override_plausibility(fabricated.pk, operator, "  ")
    client.force_login(operator)
    page = client.get(f"/review/{fabricated.pk}/").content.decode()
    assert 'id="override-plausibility"' in page and "1,243×" in page

    response = client.post(f"/review/{fabricated.pk}/override-plausibility/",
                           {"reason": "vendor demo on a new NPU; we checked the trace"})
    assert response.status_code == 302
    event = fabricated.events.get(reason__startswith=PLAUSIBILITY_OVERRIDE)
    assert event.actor == operator and event.reason.endswith("we checked the trace")

    assert approve(fabricated.pk, operator) is True
    run = PublishedRun.objects.get(submission=fabricated)
    assert run.plausibility_status == "implausible"
    assert [r.plausibility["status"] for r in PublishedRow.objects.filter(run=run)] == ["implausible"]
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "plausibility-implausible" in page and "1,243×" in page


@pytest.fixture
def unchecked(tmp_path, submit, bundle_archive, django_capture_on_commit_callbacks):
    """The seed's real M5 Max run, its hardware.json naming an Apple M5 Ultra: a chip the table leaves out
    (no sourced figure for it), so no bound applies."""
    name = "2026-04-29-llama-server-runtime"
    source = tmp_path / "results" / name
    shutil.copytree(REAL_RESULTS / name, source)
    hardware = source / "hardware.json"
    hardware.write_text(hardware.read_text().replace("Apple M5 Max", "Apple M5 Ultra"))
    with django_capture_on_commit_callbacks(execute=True):
        submission = submit(bundle_archive(name))
    submission.refresh_from_db()
    assert submission.validation_report["plausibility"][name]["verdict"]["status"] == "unchecked"
    return submission


def test_unchecked_is_not_plausible_approval_asks_for_a_written_reason(unchecked, operator, client):
    with pytest.raises(DecisionError, match="unchecked.*not in the chip table.*written override"):
        approve(unchecked.pk, operator)
    assert not PublishedRun.objects.exists()
    client.force_login(operator)
    page = client.get(f"/review/{unchecked.pk}/").content.decode()
    assert 'id="override-plausibility"' in page and "unchecked is not plausible" in page
    response = client.post(f"/review/{unchecked.pk}/approve/")
    assert response.status_code == 302 and not PublishedRun.objects.exists()
    client.post(f"/review/{unchecked.pk}/override-plausibility/",
                {"reason": "the M5 Ultra is new; its bandwidth is 2x the M5 Max's and these speeds fit under it"})
    assert approve(unchecked.pk, operator) is True
    assert PublishedRun.objects.get(submission=unchecked).plausibility_status == "unchecked"


@pytest.mark.parametrize("blank", [
    "", "   ", "\t\n", "\u200b", "\u200b\u200c\u200d\u2060\ufeff", " \u200b \u00a0 \u3000 ", "\u3164\u3164",
    "\u2800", "\u00ad\u200b.", "-- . ,",
], ids=["empty", "spaces", "tab-newline", "ZWSP", "zero-width family", "mixed blanks", "hangul filler",
        "braille blank", "soft hyphen + dot", "punctuation only"])
def test_a_reason_is_words_not_whitespace_or_invisible_characters(unchecked, fabricated, operator, blank):
    for submission in (unchecked, fabricated):
        with pytest.raises(DecisionError, match="in words"):
            override_plausibility(submission.pk, operator, blank)
        assert not submission.events.filter(reason__startswith=PLAUSIBILITY_OVERRIDE).exists()
        with pytest.raises(DecisionError):
            approve(submission.pk, operator)


def test_a_reason_in_any_script_is_words(unchecked, operator):
    assert override_plausibility(unchecked.pk, operator, "\u200b 新しいチップ、帯域は公表値の範囲内 \u200b") is True
    assert approve(unchecked.pk, operator) is True


def test_a_run_page_shows_an_unchecked_verdict_and_why(unchecked, operator, client):
    submission = unchecked
    override_plausibility(submission.pk, operator, "a real run on a chip the table does not list yet")
    assert approve(submission.pk, operator) is True
    run = PublishedRun.objects.get(submission=submission)
    assert run.plausibility_status == "unchecked"
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "plausibility-unchecked" in page and "is not in the chip table" in page  # shown, never hidden
    api = client.get(f"/api/v1/runs/{run.pk}/").json()
    assert api["plausibility"]["verdict"]["status"] == "unchecked" and api["plausibility"]["rows"]["unchecked"] == 9
