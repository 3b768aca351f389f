"""`Authorization: Bearer bp_…` for the API, checked against stored hashes."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import authentication, exceptions

from accounts.models import ApiToken, hash_token


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0] != self.keyword:
            raise exceptions.AuthenticationFailed("use 'Authorization: Bearer <token>'")
        token = ApiToken.objects.active().select_related("user").filter(token_hash=hash_token(parts[1])).first()
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("invalid or revoked token")
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        return token.user, token

    def authenticate_header(self, request):
        return self.keyword
