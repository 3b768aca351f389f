"""`/answer/?work=…&min_decode=…&max_ttft=…&min_pass=…&hardware_class=…&max_memory_gb=…`: the
registry's question asked directly (registry_site.catalogue.answer), answered on one shareable GET
page: the systems that meet it, ranked, with their evidence, or plainly that none does and which
came closest."""

from __future__ import annotations

from django.shortcuts import render

from registry_site.catalogue import answer as shared
from registry_site.catalogue.models import LeaderboardEntry


def answer(request):
    # .order_by(): the model's default ordering (pk) would make DISTINCT repeat each class once per row
    classes = set(LeaderboardEntry.objects.filter(case="").order_by().values_list("hardware_class", flat=True))
    context = {"params": request.GET, "works": shared.work_choices(),
               "hardware_classes": sorted(h for h in classes if h)}
    if not request.GET.get("work"):
        return render(request, "registry_site/answer.html", {**context, "answer": None})
    try:
        found = shared.answer(shared.Question.from_params(request.GET))
    except shared.QuestionError as error:
        return render(request, "registry_site/answer.html", {**context, "answer": None, "error": error}, status=400)
    return render(request, "registry_site/answer.html", {**context, "answer": found, "q": found.question})
