"""The `operators` group carries the review permission (not "any superuser")."""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission

OPERATORS_GROUP = "operators"


def operators_group() -> Group:
    group, _ = Group.objects.get_or_create(name=OPERATORS_GROUP)
    permission = Permission.objects.get(codename="review_submission", content_type__app_label="submissions")
    group.permissions.add(permission)
    return group


def make_operator(user) -> None:
    user.groups.add(operators_group())


def is_operator(user) -> bool:
    return user.is_authenticated and user.has_perm("submissions.review_submission")


def has_verified_email(user) -> bool:
    if not user.is_authenticated:
        return False
    from allauth.account.models import EmailAddress

    return EmailAddress.objects.filter(user=user, verified=True).exists()


def operators():
    """Active users who hold the review permission (the group, or superusers)."""
    from django.contrib.auth import get_user_model
    from django.db.models import Q

    return (
        get_user_model()
        .objects.filter(is_active=True)
        .filter(Q(is_superuser=True) | Q(groups__name=OPERATORS_GROUP) | Q(user_permissions__codename="review_submission"))
        .distinct()
    )


def operator_count() -> int:
    return operators().count()
