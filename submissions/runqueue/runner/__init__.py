"""The runner host's side of the run queue: a Celery worker that is *not* the Django project.

It imports no Django and holds no registry credential but its host token
(BENCHPACK_HOST_TOKEN) and its own broker login (CELERY_BROKER_URL, a
RabbitMQ user limited to `runs.<host>`). Everything it tells the registry —
claim, heartbeat, progress and rows, hardware, the finished bundle, failure
— goes over the registry's HTTP API (submissions.api.runner_host_v1), which
checks every call against the run request's assigned host.

    celery -A submissions.runqueue.runner.app worker -Q runs.<host> --concurrency=1 \\
        --prefetch-multiplier=1 --without-gossip --without-mingle --without-heartbeat

(deploy/systemd/benchpack-runner@.service, deploy/runner.env.example).
"""
