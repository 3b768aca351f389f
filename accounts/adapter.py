"""Failed-login limits an attacker cannot turn against the account's owner.

allauth counts failed logins per address (`…/ip`) and per login name
(`…/key`). With the per-name count alone, anyone who knows an email address
could lock its owner out: 32 wrong passwords from one address used up the
account's allowance for every address. Here the `key` of `login_failed` is
the login name *and* the client address, so failures from one address only
slow that address; and `login_failed_account` is a ceiling per login name
across all addresses (high: `LOGIN_FAILED_ACCOUNT_RATE_LIMIT`, 100 an hour),
which bounds a distributed guess and which a single address cannot reach
(its own limits stop it at 5 per 5 minutes). docs/service.md, "Failed logins".
"""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.internal import ratelimit


class AccountAdapter(DefaultAccountAdapter):
    def _login_name_key(self, request, **credentials) -> str:
        return super()._get_login_attempts_cache_key(request, **credentials)

    def _get_login_attempts_cache_key(self, request, **credentials) -> str:
        return f"{self._login_name_key(request, **credentials)}@{self.get_client_ip(request)}"

    def pre_authenticate(self, request, **credentials) -> None:
        super().pre_authenticate(request, **credentials)  # per address, and per login name from this address
        self._account_rl_usage = ratelimit.consume(
            request, app="allauth.account", action="login_failed_account",
            key=self._login_name_key(request, **credentials),
        )
        if not self._account_rl_usage:
            raise self.validation_error("too_many_login_attempts")

    def _rollback_login_failed_rl_usage(self) -> None:
        """A successful login gives back what it consumed, in both counts."""
        super()._rollback_login_failed_rl_usage()
        usage = getattr(self, "_account_rl_usage", None)
        if usage:
            usage.rollback()

    def _delete_login_attempts_cached_email(self, request, **credentials) -> None:
        """After a password reset: this address's count and the account-wide one start again."""
        super()._delete_login_attempts_cached_email(request, **credentials)
        ratelimit.clear(request, app="allauth.account", action="login_failed_account",
                        key=self._login_name_key(request, **credentials))
