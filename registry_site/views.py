from django.conf import settings
from django.http import FileResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control

from registry_site.catalogue import leaderboard as lb
from registry_site.models import PublishedRun
from registry_site.pages.tour import tour


def home(request):
    """The newest public runs, and the way into the leaderboards.

    Newest first by id (runs are inserted when approved): it walks the primary key backwards,
    where the model's default order by published_at sorted every public run (0.7 s at 1M rows)."""
    runs = PublishedRun.objects.public().order_by("-pk").defer("hardware", "run_metadata")[:100]
    return render(request, "registry_site/home.html", {"runs": runs, "boards": lb.boards()[:30], "tour": tour()})


@cache_control(public=True, max_age=86400)
def favicon(request):
    """/favicon.ico, which every browser asks for whatever the page links (a 404 in every log otherwise)."""
    return FileResponse(open(settings.BASE_DIR / "static" / "benchpack" / "favicon.ico", "rb"),
                        content_type="image/x-icon")
