from django.db import models


class PublishedRunQuerySet(models.QuerySet):
    def public(self):
        """Published rows exist only for approved submissions; say so anyway."""
        return self.filter(submission__state="approved")
