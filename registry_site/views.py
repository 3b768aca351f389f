from django.shortcuts import get_object_or_404, render

from registry_site.models import PublishedRun


def home(request):
    runs = PublishedRun.objects.public().select_related("submission")[:100]
    return render(request, "registry_site/home.html", {"runs": runs})


def run_detail(request, pk):
    run = get_object_or_404(PublishedRun.objects.public(), pk=pk)
    return render(request, "registry_site/run_detail.html", {"run": run, "cases": run.cases.all()})
