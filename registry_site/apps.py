from django.apps import AppConfig


class RegistrySiteConfig(AppConfig):
    name = "registry_site"
    verbose_name = "Public catalogue"
    default_auto_field = "django.db.models.BigAutoField"
