from urllib.parse import urlsplit

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class RegistrySiteConfig(AppConfig):
    name = "registry_site"
    verbose_name = "Public catalogue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        post_migrate.connect(sync_site_and_cache_table, sender=self)


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
