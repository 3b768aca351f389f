from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render

from registry_site.models import PublishedRun

RUN_CASES_PER_PAGE = 100


def home(request):
    runs = PublishedRun.objects.public().select_related("submission")[:100]
    return render(request, "registry_site/home.html", {"runs": runs})


def run_detail(request, pk):
    """A page of at most RUN_CASES_PER_PAGE cases, and the charts of those cases' rows only."""
    run = get_object_or_404(PublishedRun.objects.public(), pk=pk)
    page = Paginator(run.cases.all(), RUN_CASES_PER_PAGE).get_page(request.GET.get("page"))
    cases = list(page.object_list)
    page_rows = run.rows.filter(case__in=[c.case for c in cases]).only("raw")
    return render(request, "registry_site/run_detail.html",
                  {"run": run, "cases": cases, "page": page, "page_rows": page_rows})
