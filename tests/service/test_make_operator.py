import pytest
from django.core.management import CommandError, call_command


def test_it_makes_an_existing_user_an_operator(submitter):
    assert not submitter.has_perm("submissions.review_submission")
    call_command("make_operator", submitter.email)
    submitter = type(submitter).objects.get(pk=submitter.pk)  # drop the permission cache
    assert submitter.has_perm("submissions.review_submission")
    assert not submitter.is_superuser


def test_it_changes_nothing_on_dry_run(submitter, capsys):
    call_command("make_operator", submitter.email, "--dry-run")
    assert "would make operator" in capsys.readouterr().out
    submitter = type(submitter).objects.get(pk=submitter.pk)
    assert not submitter.has_perm("submissions.review_submission")


def test_it_names_the_missing_user(db):
    with pytest.raises(CommandError, match="no user with email nobody@example.org"):
        call_command("make_operator", "nobody@example.org")
