"""`benchpack submit`: uploads, then polls until the submission leaves received/validating."""

import httpx
import pytest

from benchpack.errors import ConfigError
from benchpack.bundles.submit import SubmitError, submit_bundle


def _server(states):
    """A registry whose submission moves through `states`, one per status poll."""
    seen = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, request.headers.get("authorization")))
        if request.method == "POST":
            assert b'name="archive"; filename="bundle.tar.gz"' in request.read()
            return httpx.Response(201, json={"id": "abc", "state": "received"})
        return httpx.Response(200, json={"id": "abc", "state": states.pop(0), "error_codes": ["secret.bearer-token"]})

    return httpx.MockTransport(handle), seen


def test_it_uploads_and_follows_the_state_until_validation_ends(tmp_path):
    archive = tmp_path / "bundle.tar.gz"
    archive.write_bytes(b"\x1f\x8bfake")
    transport, seen = _server(["validating", "validating", "quarantined"])
    states = []
    result = submit_bundle(archive, "http://registry.test", "bp_t0ken", poll_interval_s=0,
                           on_state=states.append, transport=transport)
    assert result.created is True
    assert result.submission["state"] == "quarantined"
    assert states == ["received", "validating", "quarantined"]
    assert all(auth == "Bearer bp_t0ken" for _, _, auth in seen)
    assert [path for _, path, _ in seen] == ["/api/v1/submissions/"] + ["/api/v1/submissions/abc/"] * 3


def test_it_says_why_the_server_refused(tmp_path):
    archive = tmp_path / "bundle.tar.gz"
    archive.write_bytes(b"x")
    transport = httpx.MockTransport(lambda r: httpx.Response(413, json={"error": "bundle.tar.gz: over the limit"}))
    with pytest.raises(SubmitError, match=r"refused the upload \(413\): bundle.tar.gz: over the limit"):
        submit_bundle(archive, "http://registry.test", "bp_x", transport=transport)


def test_it_needs_a_token_and_an_http_url(tmp_path):
    with pytest.raises(ConfigError, match="token"):
        submit_bundle(tmp_path, "http://registry.test", "")
    with pytest.raises(ConfigError, match="not an http"):
        submit_bundle(tmp_path, "ftp://registry.test", "bp_x")


@pytest.mark.parametrize("state, code", [("quarantined", 0), ("invalid", 1), ("failed", 1)])
def test_the_command_exits_nonzero_unless_the_bundle_was_accepted(state, code, monkeypatch, capsys, tmp_path):
    """`failed` (the server could not finish validating) is no success: the user must send it again."""
    from argparse import Namespace

    from benchpack.commands import submit as command
    from benchpack.bundles.submit import SubmitResult

    submission = {"id": "abc", "state": state, "error_codes": ["validation.attempts-exhausted"] if state == "failed" else []}
    monkeypatch.setattr("benchpack.bundles.submit.submit_bundle", lambda *a, **k: SubmitResult(submission, True))
    args = Namespace(bundle=tmp_path, server="http://registry.test", token="bp_x", no_wait=False, timeout=1.0)
    assert command.run(args) == code
    if state == "failed":
        assert "not judged: submit it again later" in capsys.readouterr().err
