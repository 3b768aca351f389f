"""Tasks looked up by name, so services never import task modules (tasks stay thin entry points at the
top of the import graph: they call services, never the other way round)."""

from __future__ import annotations

VALIDATE_SUBMISSION = "submissions.tasks.validate_submission"
DELIVER_QUEUED_EMAIL = "submissions.tasks.deliver_queued_email"


def task(name: str):
    """The registered task `name` (the app finalizes and autodiscovers on first use); `.delay()` honours
    CELERY_TASK_ALWAYS_EAGER like the task object does."""
    import importlib

    from registry_site.celery import app

    if name not in app.tasks:
        # Outside a worker nothing has run autodiscovery: load the task's module by its name.
        importlib.import_module(name.rsplit(".", 1)[0])
    return app.tasks[name]
