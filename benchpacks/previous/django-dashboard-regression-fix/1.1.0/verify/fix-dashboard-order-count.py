"""Pass iff the dashboard counts each paid order once (hidden checks through
Django in the candidate's sandboxed process, judged here), month validation
still answers 400, the shipped tests, migrations, models and settings are
untouched, and only the sales app's report/view/template code changed."""

import sys

sys.dont_write_bytecode = True  # never leave __pycache__ in the pack

from pathlib import Path  # noqa: E402

import verifykit  # noqa: E402

ctx = verifykit.parse_args()
if verifykit.check_evidence(ctx):
    verifykit.check_changed(ctx)
    verifykit.check_scope(ctx, ("sales/reports.py", "sales/views.py", "sales/templates/sales/*.html", "sales/tests/test_*.py"))
    verifykit.check_protected(ctx, ("sales/tests/test_dashboard.py", "sales/migrations/*", "sales/models.py", "config/*", "manage.py"))
    checks = verifykit.load_module(Path(__file__).resolve().parent / "hidden" / ctx.case / "checks.py", "dashboard_checks")
    verifykit.check_hidden(ctx, checks.SETUP, verifykit.hidden_probes(ctx, checks), timeout=90)
    env = {"DJANGO_SETTINGS_MODULE": "config.settings"}
    verifykit.check_visible_tests(ctx, verifykit.python_argv(script="manage.py", args=["test", "sales", "--noinput"]), env=env, timeout=90)
sys.exit(verifykit.finish(ctx))
