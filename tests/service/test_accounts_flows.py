"""Sign-up, verification, login by email, password reset and email change: allauth, as configured."""

import re

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail


def _link(body: str) -> str:
    return re.search(r"http://testserver(/accounts/\S+/)", body).group(1)


def test_it_requires_email_verification_before_login(client, db):
    response = client.post("/accounts/signup/", {"email": "erin@example.org", "password1": "a long passphrase 42",
                                                 "password2": "a long passphrase 42"})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/confirm-email/"
    assert not EmailAddress.objects.get(email="erin@example.org").verified
    client.logout()
    login = client.post("/accounts/login/", {"login": "erin@example.org", "password": "a long passphrase 42"})
    assert login["Location"] == "/accounts/confirm-email/"  # not logged in until verified

    confirm = _link(mail.outbox[-1].body)
    client.post(confirm)
    assert EmailAddress.objects.get(email="erin@example.org").verified


def test_it_resets_a_forgotten_password(client, submitter):
    client.post("/accounts/password/reset/", {"email": submitter.email})
    reset_page = client.get(_link(mail.outbox[-1].body), follow=True)
    client.post(reset_page.redirect_chain[-1][0], {"password1": "another long passphrase 7",
                                                   "password2": "another long passphrase 7"})
    assert get_user_model().objects.get(pk=submitter.pk).check_password("another long passphrase 7")


def test_it_changes_the_email_address_after_verifying_the_new_one(client, submitter):
    client.force_login(submitter)
    client.post("/accounts/email/", {"action_add": "", "email": "alice.new@example.org"})
    assert [m.to for m in mail.outbox][-1] == ["alice.new@example.org"]
    client.post(_link(mail.outbox[-1].body))
    assert EmailAddress.objects.get(email="alice.new@example.org").verified
    assert get_user_model().objects.get(pk=submitter.pk).email == "alice.new@example.org"
