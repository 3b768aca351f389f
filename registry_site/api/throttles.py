"""API throttles: one counter per client and window, in the shared cache.

DRF's own throttles keep a sliding window: the list of every request's
timestamp within the period, read, unpickled, appended to, pickled and
written back on each request. At 120/minute that list is short; at the rates
an operator sets for a busy mirror or a benchmark (100,000,000/minute in
bench/catalogue_load.py) it grows to every request of the last minute:
tens of thousands of floats moved through the cache per request. Here each
client has one integer per fixed window (`cache.incr`, atomic in Redis), so
a request costs the same at any rate. The price is the usual fixed-window
one: a client may spend one window's allowance at its end and the next at
the start of the next.

Anonymous clients count per address (AnonRateThrottle's scope and key
prefix, `throttle_anon_<address>_<window>`), signed-in clients per user.
DRF's UserRateThrottle also counts anonymous clients, by address; here an
anonymous request is counted once, by the anonymous throttle only.
"""

from __future__ import annotations

import time

from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class FixedWindowMixin:
    def allow_request(self, request, view):
        if self.rate is None:
            return True
        ident_key = self.get_cache_key(request, view)
        if ident_key is None:
            return True
        self.now = self.timer()
        window = int(self.now // self.duration)
        self.window_ends = (window + 1) * self.duration
        key = f"{ident_key}_{window}"
        try:
            count = self.cache.incr(key)
        except ValueError:  # the first request of this window (or the entry expired)
            if self.cache.add(key, 1, self.duration + 1):
                count = 1
            else:
                count = self.cache.incr(key)
        return count <= self.num_requests

    def wait(self):
        return max(0.0, self.window_ends - self.now)

    def timer(self):
        return time.time()


class AnonymousRateThrottle(FixedWindowMixin, AnonRateThrottle):
    pass


class SignedInUserRateThrottle(FixedWindowMixin, UserRateThrottle):
    def get_cache_key(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return None  # counted by AnonymousRateThrottle
        return super().get_cache_key(request, view)
