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
    verifykit.check_protected(ctx, ("sales/tests/test_dashboard.py", "sales/tests/__init__.py", "sales/migrations/**",
                                    "sales/models.py", "config/**", "manage.py"))  # fmt: skip
    verifykit.check_introspection(ctx)
    checks = verifykit.load_module(Path(__file__).resolve().parent / "hidden" / ctx.case / "checks.py", "dashboard_checks")
    # One ordinary process: Django's test bootstrap (PRE), the shipped tests exactly as shipped, then the probes.
    verifykit.check_python(ctx, pre=checks.PRE, setup=checks.SETUP, probes=verifykit.hidden_probes(ctx, checks),
                           tests=("sales/tests/test_dashboard.py",), env={"DJANGO_SETTINGS_MODULE": "config.settings"}, timeout=90)
sys.exit(verifykit.finish(ctx))
