"""Give an existing user the review permission, or create a verified operator.

    manage.py make_operator alice@example.org
    manage.py make_operator ops@example.org --create --password '…'
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.operators import make_operator


class Command(BaseCommand):
    help = "Add a user (by email) to the operators group, which may approve or reject submissions."

    def add_arguments(self, parser):
        parser.add_argument("email")
        parser.add_argument("--create", action="store_true", help="create the user with a verified email if missing")
        parser.add_argument("--password", help="password for a user created with --create")
        parser.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")

    def handle(self, *args, email, create, password, dry_run, **options):
        from allauth.account.models import EmailAddress

        User = get_user_model()
        user = User.objects.filter(email__iexact=email).first()
        if user is None and not create:
            raise CommandError(f"no user with email {email}; sign up first or pass --create")
        if user is None and not password:
            raise CommandError("--create needs --password")
        if dry_run:
            action = "create and make operator" if user is None else "make operator"
            self.stdout.write(f"would {action}: {email}")
            return
        with transaction.atomic():
            if user is None:
                user = User.objects.create_user(username=email, email=email, password=password)
                EmailAddress.objects.create(user=user, email=email, verified=True, primary=True)
            make_operator(user)
        self.stdout.write(self.style.SUCCESS(f"{email} is an operator"))
