from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The catalogue imports nothing from this app: what it announces, and the evidence it shows but
        # this app owns, are connected here (docs/internals.md, "The service's apps").
        from registry_site.catalogue import evidence, signals
        from submissions.receivers import record_run_status_change
        from submissions.runqueue.reproduction import summary

        signals.run_status_changed.connect(record_run_status_change, dispatch_uid="submissions.run_status_changed")
        evidence.provide_reproduction_summary(summary)
