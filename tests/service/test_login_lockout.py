"""Failed-login limits per address and per account together (issue 22 §5): an attacker's wrong passwords
slow the attacker's address, never the owner's login from another address; an account-wide ceiling, which
no single address can reach, still bounds a guess spread over many addresses (accounts/adapter.py)."""

from __future__ import annotations

import pytest
from django.core.cache import cache

OWNER = "alice@example.org"
PASSWORD = "correct horse battery"
LIMITED = b"Too many failed login attempts"


@pytest.fixture(autouse=True)
def fresh_counts(db):
    cache.clear()
    yield
    cache.clear()


def _login(client, password: str, address: str, login: str = OWNER):
    return client.post("/accounts/login/", {"login": login, "password": password}, REMOTE_ADDR=address)


def test_32_wrong_passwords_from_one_address_do_not_lock_the_owner_out(client, make_user):
    make_user(OWNER, password=PASSWORD)
    attacker = [_login(client, f"guess-{n}", "203.0.113.9") for n in range(32)]
    refused = [LIMITED in r.content or r.status_code == 429 for r in attacker]  # 429: allauth's 30/m/ip on the view
    assert refused == [False] * 5 + [True] * 27  # 5 per 5 minutes for this account from this address
    owner = _login(client, PASSWORD, "198.51.100.20")
    assert owner.status_code == 302 and LIMITED not in owner.content
    # and the owner's own mistakes are counted apart from the attacker's
    client.logout()
    assert LIMITED not in _login(client, "typo", "198.51.100.20").content


def test_the_address_limit_spans_accounts(client, make_user):
    results = [LIMITED in _login(client, "wrong", "203.0.113.10", login=f"user{n}@example.org").content
               for n in range(11)]
    assert results == [False] * 10 + [True]  # "10/m/ip", whatever names it tries


def test_an_account_wide_ceiling_bounds_a_guess_spread_over_addresses(client, make_user, settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login_failed_account": "12/h/key"}
    make_user(OWNER, password=PASSWORD)
    refused = [LIMITED in _login(client, "wrong", f"203.0.113.{n // 4}").content for n in range(16)]
    assert refused == [False] * 12 + [True] * 4  # 4 addresses x 4 tries: each under its own 5, the 13th over 12
