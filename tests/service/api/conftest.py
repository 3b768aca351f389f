"""A small public catalogue built the way production builds it: real bundles,
validated, then approved (published) or left quarantined/rejected."""

from __future__ import annotations

import inspect

import pytest


@pytest.fixture(autouse=True)
def _no_throttle_carry_over(db):
    from django.core.cache import cache

    cache.clear()  # throttle counts live in the shared cache; each test starts fresh


CATALOGUE = (  # key, real result directory, provenance claimed
    ("smoke", "2026-04-29-llama-server-smoke", "self-reported"),
    ("runtime", "2026-04-29-llama-server-runtime", "operator-curated"),
    ("mlx_runtime", "2026-04-28-mlx-lm-runtime", "self-reported"),
    ("quarantined", "2026-04-28-mlx-lm-smoke", "self-reported"),
    ("rejected", "2026-04-30-llama-server-desktop-django-wrap", "self-reported"),
)


def build_catalogue(submitter, operator, curator, archive) -> dict:
    """Submit, validate, then approve / leave quarantined / reject the CATALOGUE's bundles; `archive(name,
    provenance=…)` makes each archive. Returns the submissions by key and the published runs under "runs"."""
    from submissions import states
    from submissions.intake import receive_upload
    from submissions.review import reject
    from tests.service.vouch import approve
    from submissions.tasks import validate_submission

    made = {}
    for key, result, provenance in CATALOGUE:
        path = archive(result, provenance=provenance)
        # Published provenance is earned: "runtime" is operator-curated because an operator uploaded it.
        submission = receive_upload(curator if key == "runtime" else submitter, path.name, path.read_bytes())
        assert validate_submission(str(submission.pk)) == states.QUARANTINED, key
        made[key] = submission
    for key in ("smoke", "runtime", "mlx_runtime"):
        assert approve(made[key].pk, operator)
    reject(made["rejected"].pk, operator, "not for the public catalogue")
    made["runs"] = {key: made[key].published_runs.get() for key in ("smoke", "runtime", "mlx_runtime")}
    return made


# Modules whose every test asks for `catalogue` (and none for a transactional database) build it once
# (`_catalogue_once`) and each test sees it through its own transaction, rolled back after it, as pytest-django
# does for every `db` test: the module's build is an outer transaction, each test a savepoint inside it. In any
# other module a test that does not ask for the catalogue must not find it, so there it is built per test.
ONCE = pytest.StashKey[set]()
_TRANSACTIONAL = {"transactional_db", "live_server", "django_db_reset_sequences", "django_db_serialized_rollback"}


def pytest_collection_modifyitems(config, items):
    by_module: dict[str, list] = {}
    for item in items:
        if item.nodeid.startswith("tests/service/api/"):
            by_module.setdefault(item.module.__name__, []).append(item)
    once = set()
    for module, module_items in by_module.items():
        def eligible(item):
            marker = item.get_closest_marker("django_db")
            transactional = marker is not None and (marker.kwargs.get("transaction") or
                                                    (marker.args and marker.args[0]))
            names = set(item.fixturenames)
            return "catalogue" in names and not transactional and not (names & _TRANSACTIONAL)
        if all(eligible(item) for item in module_items):
            once.add(module)
    config.stash[ONCE] = once


@pytest.fixture(scope="module")
def _catalogue_once(request, django_db_setup, django_db_blocker, tmp_path_factory):
    """The module's catalogue, in a transaction left open until the module's last test (then rolled back);
    None where the module builds it per test."""
    if request.module.__name__ not in request.config.stash.get(ONCE, set()):
        yield None
        return
    from accounts.operators import make_operator
    from django.db import transaction

    from tests.service.conftest import create_user, make_archive

    tmp = tmp_path_factory.mktemp("catalogue")
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            # The users in the order the function fixtures make them (submitter, operator, curator).
            users = {("alice@example.org", True, "correct horse battery"): create_user()}
            operator = users[("ops@example.org", True, "correct horse battery")] = create_user("ops@example.org")
            make_operator(operator)
            curator = create_user("curator@example.org")
            make_operator(curator)
            made = build_catalogue(users[("alice@example.org", True, "correct horse battery")], operator, curator,
                                   lambda *a, **k: make_archive(tmp, *a, **k))
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    try:
        yield {"users": {key: user.pk for key, user in users.items()},
               "submissions": {key: value.pk for key, value in made.items() if key != "runs"},
               "runs": {key: run.pk for key, run in made["runs"].items()}}
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def make_user(make_user, _catalogue_once):
    """Where the module built the catalogue once, its users exist already: asking for one of them (same address,
    verification and password) gives that user; any other is made as usual."""
    if _catalogue_once is None:
        return make_user
    from django.contrib.auth import get_user_model

    signature = inspect.signature(make_user)

    def make(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        pk = _catalogue_once["users"].get(tuple(bound.arguments.values()))
        return get_user_model().objects.get(pk=pk) if pk is not None else make_user(*args, **kwargs)

    return make


@pytest.fixture
def catalogue(request, _catalogue_once, db):
    """The small public catalogue: submissions "smoke", "runtime" (operator-curated), "mlx_runtime" approved,
    "quarantined" left in quarantine, "rejected" rejected; their published runs under "runs". Fresh model
    instances for each test either way."""
    if _catalogue_once is None:
        from accounts.operators import make_operator

        submitter = request.getfixturevalue("submitter")
        operator = request.getfixturevalue("operator")
        curator = request.getfixturevalue("make_user")("curator@example.org")
        make_operator(curator)
        return build_catalogue(submitter, operator, curator, request.getfixturevalue("bundle_archive"))
    from registry_site.catalogue.models import PublishedRun
    from submissions.models import Submission

    made = {key: Submission.objects.get(pk=pk) for key, pk in _catalogue_once["submissions"].items()}
    made["runs"] = {key: PublishedRun.objects.get(pk=pk) for key, pk in _catalogue_once["runs"].items()}
    return made


@pytest.fixture
def publish_variant(submit, bundle_archive, operator, tmp_path):
    """`publish_variant(base, name, speed=…, runtime=…)`: a scaled copy of a real result dir
    (tests.service.variants), through the real intake → validate → approve path."""
    from registry_site.catalogue.models import PublishedRun
    from submissions import states
    from tests.service.vouch import approve
    from submissions.tasks import validate_submission
    from tests.service.variants import make_variant

    def do(base, name, **changes):
        make_variant(tmp_path / "results", base, name, **changes)
        submission = submit(bundle_archive(name))
        assert validate_submission(str(submission.pk)) == states.QUARANTINED
        assert approve(submission.pk, operator)
        return PublishedRun.objects.get(submission=submission)

    return do
