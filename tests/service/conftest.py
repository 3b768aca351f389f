"""Fixtures for the registry service: users in each role and real bundle archives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.data_paths import REAL_RESULTS



def create_user(email="alice@example.org", verified=True, password="correct horse battery"):
    """A user with a primary e-mail address, verified or not (what `make_user` makes)."""
    from allauth.account.models import EmailAddress
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(username=email, email=email, password=password)
    EmailAddress.objects.create(user=user, email=email, verified=verified, primary=True)
    return user


@pytest.fixture
def make_user(db):
    return create_user


@pytest.fixture
def submitter(make_user):
    return make_user()


@pytest.fixture
def operator(make_user):
    from accounts.operators import make_operator

    user = make_user("ops@example.org")
    make_operator(user)
    return user


def make_archive(tmp: Path, result_name="2026-04-29-llama-server-smoke", suffix=".tar.gz",
                 provenance="self-reported") -> Path:
    """A real .tar.gz (or `suffix`) bundle of the result directory `tmp/results/<name>`, copied from the real
    results when it is not there (a test may put a variant there first)."""
    from benchpack.bundles.archives import pack_archive
    from benchpack.bundles.create import create_bundle

    source = tmp / "results" / result_name
    if not source.exists():
        shutil.copytree(REAL_RESULTS / result_name, source)
        for path in [source, *source.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    bundle = create_bundle([source], tmp / f"bundle-{result_name}-{provenance}", provenance)
    return pack_archive(bundle, tmp / f"{result_name}-{provenance}{suffix}")


@pytest.fixture
def bundle_archive(tmp_path):
    """A real .tar.gz bundle of a real result directory; `bundle_archive(name)` for others."""
    return lambda *args, **kwargs: make_archive(tmp_path, *args, **kwargs)


@pytest.fixture
def submit(submitter):
    """Receive an archive as `user` (default: the submitter), validating it in-process."""
    from submissions.intake import receive_upload

    def do(archive: Path, user=None):
        return receive_upload(user or submitter, archive.name, archive.read_bytes())

    return do


@pytest.fixture(autouse=True)
def _empty_response_cache():
    """Each test's database starts at the same catalogue generation; a response cached by another test must not
    answer (registry_site/catalogue/cache.py)."""
    from registry_site.catalogue.cache import RESPONSES

    RESPONSES.clear()


@pytest.fixture(autouse=True)
def _celery_join_allowed():
    """Each test starts outside any task, as a test does. Celery's "would a join block" flag is one global per
    process, set and restored around every eager `apply_async` (celery/app/task.py, `denied_join_result`); two
    threads doing that at once (a threaded live server, concurrent eager uploads) can restore it in the wrong
    order and leave it set, and a later test's `EagerResult.get()` then raises "Never call result.get() within
    a task!" — seen in CI once longest-first scheduling put such a test before tests/service/test_validation_faults.py."""
    from celery._state import _set_task_join_will_block

    _set_task_join_will_block(False)


# The tests whose answer can differ by database engine, which CI runs a second time on PostgreSQL
# (`-m database`, .ci/run): those using pytest-django's test database (the django_db mark or a fixture
# built on it: db, transactional_db, live_server, client with a user, …) and those starting a live service
# (tests/service/live.py gives it a database of its own on DATABASE_URL's server). Not the others: the
# demo tests remove DATABASE_URL and test SQLite again, and pure unit tests never open a connection.
_DATABASE_FIXTURES = {"django_db_setup", "db", "transactional_db", "live_server"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if not item.nodeid.startswith("tests/service/"):
            continue
        uses_db = item.get_closest_marker("django_db") is not None or bool(
            _DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())))
        starts_live = getattr(getattr(item, "module", None), "start_live_service", None) is not None
        if uses_db or starts_live:
            item.add_marker(pytest.mark.database)
