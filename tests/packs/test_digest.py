"""benchpack.digest.sha256 (CPython's own SHA-256, no OpenSSL start) gives hashlib's digests."""

import hashlib

from benchpack.digest import sha256


def test_the_digest_is_hashlibs_for_one_call_and_for_updates():
    texts = [b"", b"abc", "pr\u00e9cis \u2014 d\u00e9j\u00e0".encode(), bytes(range(256)) * 300]
    for data in texts:
        assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    ours, theirs = sha256(), hashlib.sha256()
    for data in texts:
        ours.update(data)
        theirs.update(data)
    assert ours.hexdigest() == theirs.hexdigest() and ours.digest() == theirs.digest()
