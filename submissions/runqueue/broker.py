"""The broker that carries `runs.<host>` queues, as the registry sees it.

In production this is RabbitMQ (RUNNER_BROKER_URL), where every host has a
user of its own limited to its queue; the registry's own work (validation,
email, beat) stays on CELERY_BROKER_URL (Redis). When RUNNER_BROKER_URL is
unset both are one broker (the demo's filesystem broker, a test's Redis).
"""

from __future__ import annotations

import contextlib
import functools

from celery import Celery
from django.conf import settings


@functools.lru_cache(maxsize=4)
def _app(url: str) -> Celery:
    app = Celery("benchpack-runs", broker=url, set_as_current=False)
    app.conf.update(broker_connection_timeout=settings.CELERY_BROKER_CONNECTION_TIMEOUT,
                    task_publish_retry_policy=settings.CELERY_TASK_PUBLISH_RETRY_POLICY,
                    task_ignore_result=True, broker_connection_retry_on_startup=True)
    return app


def runner_app() -> Celery:
    if settings.RUNNER_BROKER_URL == settings.CELERY_BROKER_URL:
        from registry_site.celery import app

        return app
    return _app(settings.RUNNER_BROKER_URL)


def send_task(name: str, host: str | None = None, **options) -> None:
    """Send on the runner broker — into `host`'s own vhost on RabbitMQ (broker_users.url_for). The
    connection is opened for that URL explicitly: Celery would otherwise prefer a CELERY_BROKER_URL
    environment variable (the Redis of the registry's own work) over the app's configured broker."""
    from submissions.runqueue import broker_users

    app = runner_app()
    managed = bool(host) and broker_users.managed()
    if settings.RUNNER_BROKER_URL == settings.CELERY_BROKER_URL and not managed:
        app.send_task(name, **options)
        return
    url = broker_users.url_for(host) if managed else settings.RUNNER_BROKER_URL
    with contextlib.closing(app.connection_for_write(url)) as connection:
        app.send_task(name, connection=connection, **options)
