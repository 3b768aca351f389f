"""Pass iff the dashboard counts each paid order once (hidden multi-line-order
tests through the Django test runner), the shipped tests and migrations are
untouched and pass, and only the sales app's report/view/template code changed."""

import sys

sys.dont_write_bytecode = True  # never leave __pycache__ in the pack

import os  # noqa: E402
from pathlib import Path  # noqa: E402

import verifykit  # noqa: E402

HIDDEN = Path(__file__).resolve().parent / "hidden"

ctx = verifykit.parse_args()
if verifykit.check_evidence(ctx):
    verifykit.check_changed(ctx)
    verifykit.check_scope(ctx, ("sales/reports.py", "sales/views.py", "sales/templates/sales/*.html", "sales/tests/test_*.py"))
    verifykit.check_protected(ctx, ("sales/tests/test_dashboard.py", "sales/migrations/*", "sales/models.py", "config/*"))
    env = verifykit.subprocess_env({"DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ctx.workspace)})
    verifykit.check_command(ctx, "visible-tests", [sys.executable, "manage.py", "test", "sales", "--noinput"], env=env, timeout=60)
    hidden = HIDDEN / ctx.case
    env_hidden = {**env, "PYTHONPATH": os.pathsep.join([str(ctx.workspace), str(hidden)])}
    verifykit.check_command(ctx, "hidden-tests", [sys.executable, "-m", "django", "test", "test_dashboard_hidden", "--noinput"],
                            env=env_hidden, timeout=60)  # fmt: skip
sys.exit(verifykit.finish(ctx))
