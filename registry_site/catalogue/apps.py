from django.apps import AppConfig


class CatalogueConfig(AppConfig):
    """The public catalogue: published runs, leaderboards, pages and the public API.

    Its label stays `registry_site` (the app's label before it moved into this package):
    table names, migration history and model references (`registry_site.PublishedRun`)
    are unchanged on every existing database. It imports nothing from `submissions`:
    approval hands it a `Publication` (docs/internals.md, "The service's apps")."""

    name = "registry_site.catalogue"
    label = "registry_site"
    verbose_name = "Public catalogue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.core import checks

        from registry_site.catalogue import deferred_indexes

        # A database check: `manage.py check --database default` (and migrate's) runs it, plain `check` does not.
        checks.register(deferred_indexes.check_recorded, checks.Tags.database)
