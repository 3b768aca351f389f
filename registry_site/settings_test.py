"""Settings for the test suite: BENCHPACK_ENV=test unless the caller chose otherwise."""

import os

os.environ.setdefault("BENCHPACK_ENV", "test")
os.environ.setdefault("BENCHPACK_VAR_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), "var", "test"))

from registry_site.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast; tests only

# Unit tests run tasks in-process; the worker tests start a real worker with
# CELERY_TASK_ALWAYS_EAGER=false in its environment.
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", True)  # noqa: F405
CELERY_TASK_EAGER_PROPAGATES = True

if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    # A file, not memory, so that the race tests' threads (each its own
    # connection) share one database, as granian and the workers do. WAL and
    # IMMEDIATE come with the main settings.
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}  # noqa: F405

# Unit tests edit catalogue rows directly; the response cache has its own tests (override_settings).
CATALOGUE_RESPONSE_CACHE = env_bool("CATALOGUE_RESPONSE_CACHE", False)  # noqa: F405
# Likewise the generation listener: a test's changes are in a transaction that never commits, so no NOTIFY
# is sent and another connection never sees them (tests/service/catalogue/test_generation_listener.py
# turns it on with committed changes).
CATALOGUE_GENERATION_LISTEN = env_bool("CATALOGUE_GENERATION_LISTEN", False)  # noqa: F405

# Run requests go to runner workers (not this process); in-process tests keep their messages in
# memory, the live tests (CELERY_TASK_ALWAYS_EAGER=false) send them to the real broker.
if CELERY_TASK_ALWAYS_EAGER and not os.environ.get("RUNNER_BROKER_URL"):
    RUNNER_BROKER_URL = "memory://"

# In-process tests hold connections across threads (the race tests, eager tasks, the real-server
# consistency run); a pool sized for one web worker (DATABASE_POOL_MAX_SIZE, 4) left them waiting on each
# other on PostgreSQL. The pool has its own test (tests/service/test_database_pool.py), and the live
# services the e2e tests start run with the deployed settings, pool included.
if not env_bool("DATABASE_POOL_IN_TESTS", False):  # noqa: F405
    DATABASES["default"].get("OPTIONS", {}).pop("pool", None)  # noqa: F405
