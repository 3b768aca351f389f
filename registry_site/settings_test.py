"""Settings for the test suite: BENCHPACK_ENV=test unless the caller chose otherwise."""

import os

os.environ.setdefault("BENCHPACK_ENV", "test")
os.environ.setdefault("BENCHPACK_VAR_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), "var", "test"))

from registry_site.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast; tests only
