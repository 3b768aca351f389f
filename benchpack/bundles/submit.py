"""Upload a bundle to a registry service and follow it until it is decided.

A bundle directory is packed to a temporary .tar.gz first; an archive is
sent as it is. The token travels only in the Authorization header.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import httpx

from benchpack.errors import ConfigError, Problem

WAITING_STATES = {"received", "validating"}


@dataclass
class SubmitResult:
    submission: dict
    created: bool


class SubmitError(Exception):
    pass


def submit_bundle(
    bundle: Path,
    server: str,
    token: str,
    *,
    wait: bool = True,
    poll_interval_s: float = 1.0,
    timeout_s: float = 300.0,
    on_state: Callable[[str], None] | None = None,
    transport: httpx.BaseTransport | None = None,
) -> SubmitResult:
    if not token:
        raise ConfigError(Problem("--token", "", "an API token is required (create one at <server>/accounts/tokens/)"))
    base = server.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ConfigError(Problem("--server", "", f"{server!r} is not an http(s) URL"))
    headers = {"Authorization": f"Bearer {token}"}
    with tempfile.TemporaryDirectory(prefix="benchpack-submit-") as tmp, httpx.Client(
        base_url=base, headers=headers, timeout=60.0, transport=transport
    ) as client:
        archive = _as_archive(bundle, Path(tmp))
        with archive.open("rb") as fh:
            response = _request(client, "POST", "/api/v1/submissions/", files={"archive": (archive.name, fh)})
        body = _json(response)
        if response.status_code == 409 and isinstance(body.get("submission"), dict):
            submission, created = body["submission"], False
        elif response.status_code == 201:
            submission, created = body, True
        else:
            raise SubmitError(f"the server refused the upload ({response.status_code}): {body.get('error') or body.get('detail') or response.text[:200]}")
        if on_state:
            on_state(submission["state"])
        deadline = time.monotonic() + timeout_s
        while wait and submission["state"] in WAITING_STATES:
            if time.monotonic() > deadline:
                raise SubmitError(f"still {submission['state']} after {timeout_s:.0f} s; check {base}/submissions/{submission['id']}/")
            time.sleep(poll_interval_s)
            response = _request(client, "GET", f"/api/v1/submissions/{submission['id']}/")
            if response.status_code != 200:
                raise SubmitError(f"status check failed ({response.status_code})")
            previous, submission = submission["state"], _json(response)
            if on_state and submission["state"] != previous:
                on_state(submission["state"])
    return SubmitResult(submission=submission, created=created)


def _as_archive(bundle: Path, tmp: Path) -> Path:
    if bundle.is_dir():
        from benchpack.bundles.archives import pack_archive

        return pack_archive(bundle, tmp / f"{bundle.name}.tar.gz")
    if bundle.is_file():
        return bundle
    raise ConfigError(Problem(str(bundle), "", "no such bundle directory or archive"))


def _request(client: httpx.Client, method: str, url: str, **kwargs) -> httpx.Response:
    try:
        return client.request(method, url, **kwargs)
    except httpx.HTTPError as exc:
        raise SubmitError(f"cannot reach {client.base_url}: {exc}") from None


def _json(response: httpx.Response) -> dict:
    try:
        data = response.json()
    except ValueError:
        return {"error": response.text[:200]}
    return data if isinstance(data, dict) else {"error": str(data)[:200]}
