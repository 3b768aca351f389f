"""SHA-256 for the run path without starting OpenSSL.

`hashlib.sha256` is OpenSSL's: importing hashlib loads libcrypto's provider
(~2.4 ms of CPU, measured per process with -X importtime), and a
`benchpack run` needs one digest per case (the row's `case_sha256`) and, for
a depth lane, its filler's. CPython's own implementation gives the same
digest (it is SHA-256) and is a small built-in module; hashlib is the
fallback where the interpreter was built without it.
"""

try:
    from _sha256 import sha256  # CPython 3.11 and earlier
except ImportError:  # pragma: no cover - depends on the interpreter
    try:
        from _sha2 import sha256  # CPython 3.12 and later
    except ImportError:
        from hashlib import sha256

__all__ = ["sha256"]
