"""The Celery app: one for validation and run execution workers."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry_site.settings")

app = Celery("registry_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.autodiscover_tasks(["submissions.runqueue"])  # its tasks module is one level down
