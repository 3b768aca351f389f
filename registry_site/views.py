from django.shortcuts import render

from registry_site.catalogue import leaderboard as lb
from registry_site.models import PublishedRun


def home(request):
    """The newest public runs, and the way into the leaderboards."""
    runs = PublishedRun.objects.public().select_related("submission").defer("hardware", "run_metadata")[:100]
    return render(request, "registry_site/home.html", {"runs": runs, "boards": lb.boards()[:30]})
