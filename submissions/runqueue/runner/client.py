"""The runner worker's calls to the registry: HTTPS with the host token, nothing else."""

from __future__ import annotations

import json
import logging
import time

import httpx

log = logging.getLogger(__name__)


class RegistryError(RuntimeError):
    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message = status, message


class TokenRevoked(RegistryError):
    """401: the host token was revoked or rotated (or the host disabled): this worker must stop."""


class NotThisHost(RegistryError):
    """403: the request is assigned to another host."""


class ClaimLost(RegistryError):
    """409: this worker no longer holds the request."""


class RegistryClient:
    def __init__(self, base_url: str, token: str, *, timeout_s: float = 30.0, transport=None):
        self.http = httpx.Client(base_url=base_url.rstrip("/") + "/api/runner/v1/", timeout=timeout_s,
                                 headers={"Authorization": f"Bearer {token}"}, transport=transport,
                                 follow_redirects=False)

    def close(self) -> None:
        self.http.close()

    def _post(self, path: str, *, json_body=None, files=None, data=None, attempts: int = 3) -> dict:
        for attempt in range(attempts):
            try:
                response = self.http.post(path, json=json_body, files=files, data=data)
            except httpx.TransportError as exc:  # the registry restarting, a dropped connection: try again
                if attempt == attempts - 1:
                    raise RegistryError(0, f"the registry did not answer ({type(exc).__name__}: {exc})") from None
                time.sleep(0.5 * (attempt + 1))
                continue
            if response.status_code == 200:
                return response.json()
            try:
                message = response.json().get("error") or response.text[:300]
            except (ValueError, AttributeError):
                message = response.text[:300]
            kind = {401: TokenRevoked, 403: NotThisHost, 409: ClaimLost}.get(response.status_code)
            if kind is not None:
                raise kind(response.status_code, message)
            if response.status_code >= 500 and attempt < attempts - 1:
                time.sleep(0.5 * (attempt + 1))
                continue
            raise RegistryError(response.status_code, message)
        raise AssertionError("unreachable")

    # -- the host -------------------------------------------------------------
    def host_heartbeat(self, worker: str, hardware: dict | None = None) -> dict:
        return self._post("heartbeat/", json_body={"worker": worker, "hardware": hardware})

    def host_stopping(self, worker: str) -> None:
        self._post("stopping/", json_body={"worker": worker}, attempts=1)

    # -- one run ----------------------------------------------------------------
    def claim(self, request_id: str, worker: str) -> dict:
        return self._post(f"runs/{request_id}/claim/", json_body={"worker": worker})

    def heartbeat(self, request_id: str, claim: str) -> dict:
        return self._post(f"runs/{request_id}/heartbeat/", json_body={"claim": claim}, attempts=1)

    def progress(self, request_id: str, claim: str, **body) -> dict:
        return self._post(f"runs/{request_id}/progress/", json_body={"claim": claim, **body})

    def hardware(self, request_id: str, claim: str, hardware: dict) -> dict:
        return self._post(f"runs/{request_id}/hardware/", json_body={"claim": claim, "hardware": hardware})

    def end(self, request_id: str, claim: str, state: str, reason: str, log_tail: str = "",
            timings: dict | None = None) -> dict:
        return self._post(f"runs/{request_id}/end/", json_body={"claim": claim, "state": state, "reason": reason,
                                                               "log_tail": log_tail, "timings": timings or {}})

    def finish(self, request_id: str, claim: str, name: str, data: bytes, log_tail: str, timings: dict,
               rows: int) -> dict:
        return self._post(f"runs/{request_id}/finish/", files={"bundle": (name, data, "application/gzip")},
                          data={"claim": claim, "log_tail": log_tail, "timings": json.dumps(timings),
                                "rows": str(rows)}, attempts=1)
