"""API throttles. Anonymous clients count once, per address (DRF's AnonRateThrottle);
signed-in clients per user with this class.

DRF's own UserRateThrottle also counts anonymous clients (by address), so with
both installed every anonymous request was counted twice, against two rates,
at two cache writes: this one leaves anonymous requests to AnonRateThrottle.
"""

from __future__ import annotations

from rest_framework.throttling import UserRateThrottle


class SignedInUserRateThrottle(UserRateThrottle):
    def get_cache_key(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return None  # not throttled here; AnonRateThrottle counts it
        return super().get_cache_key(request, view)
