from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.models import ApiToken


@login_required
def tokens(request):
    new_token = None
    if request.method == "POST":
        name = (request.POST.get("name") or "").strip()[:100] or "benchpack CLI"
        _, new_token = ApiToken.issue(request.user, name)
    return render(
        request,
        "accounts/tokens.html",
        {"tokens": ApiToken.objects.filter(user=request.user), "new_token": new_token},
    )


@require_POST
@login_required
def revoke_token(request, pk):
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    if token.revoke():
        messages.success(request, f"Token {token.prefix}… revoked.")
    return redirect("accounts_tokens")
