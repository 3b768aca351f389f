"""`{% reproduction_panel run %}`: the reproduced / not reproduced badge of a published
run with its evidence, what it reproduces itself, and the operators' Reproduce action."""

from django import template

from submissions.runqueue.reproduction import badge

register = template.Library()


@register.inclusion_tag("submissions/runs/_reproduction.html", takes_context=True)
def reproduction_panel(context, run):
    user = context.get("user")
    attempts = list(run.reproductions.select_related("reproduction", "reproduction__submission__submitter"))
    return {
        "run": run,
        "badge": badge(run),
        "attempts": attempts,
        "reproduces": getattr(run, "reproduces", None) if hasattr(run, "reproduces") else None,
        "can_reproduce": bool(user and user.is_authenticated and user.has_perm("submissions.review_submission")),
    }
