"""`/healthz/`: liveness for a load balancer or a monitor.

Touches no database and renders no template, which also makes it the scale
benchmark's "trivial JSON view" (bench/catalogue_load.py).
"""

from django.http import JsonResponse


def healthz(request):
    return JsonResponse({"ok": True})
