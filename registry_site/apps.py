from urllib.parse import urlsplit

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ProjectConfig(AppConfig):
    """The project package as an app: its management commands (`demo`, `seed_catalogue`) span
    both apps, and the post-migrate hook below is the deployment's, not an app's. No models.
    The label is not `registry_site`: that label belongs to the catalogue app (its tables)."""

    name = "registry_site"
    label = "registry_project"
    verbose_name = "Benchpack registry (project)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # post_migrate is sent only for apps with models; the project has none, so the hook
        # follows the catalogue's migrations (every deployment has them).
        from django.apps import apps

        post_migrate.connect(sync_site_and_cache_table, sender=apps.get_app_config("registry_site"),
                             dispatch_uid="registry_project.sync_site_and_cache_table")


def sync_site_and_cache_table(using="default", **kwargs):
    """After every `migrate`: the Sites row names the configured SITE_URL (allauth's
    emails say it, never example.com), and the database cache's table exists."""
    from django.conf import settings
    from django.contrib.sites.models import Site
    from django.core.management import call_command

    domain = urlsplit(settings.SITE_URL).netloc or settings.SITE_URL
    Site.objects.using(using).update_or_create(
        pk=settings.SITE_ID, defaults={"domain": domain[:100], "name": "Benchpack registry"}
    )
    if settings.CACHES["default"]["BACKEND"].endswith("DatabaseCache"):
        call_command("createcachetable", database=using, verbosity=0)
