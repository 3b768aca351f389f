"""`manage.py demo` and a Ctrl-C that lands where Python cannot raise (importlib's module-lock
callback, a weakref callback): no "Exception ignored … Traceback" on the console, and the stop
still happens at the next step."""

from __future__ import annotations

import types
import weakref

import pytest

from registry_site.management.commands import demo


def test_a_stop_swallowed_by_a_callback_prints_nothing_and_the_next_step_stops(capsys, monkeypatch):
    command = demo.Command()
    command.stopping = False
    monkeypatch.setattr("sys.unraisablehook", demo._quiet_unraisable)

    class Target:
        pass

    target = Target()
    # A callback Python runs without being able to raise from it: the signal handler fires inside it.
    ref = weakref.ref(target, lambda _: command._on_signal(2, None))  # noqa: F841
    del target
    assert command.stopping is True
    assert "Traceback" not in capsys.readouterr().err
    with pytest.raises(demo._Stop):
        command.checkpoint()


def test_other_unraisable_exceptions_are_still_reported(monkeypatch):
    seen = []
    monkeypatch.setattr(demo._quiet_unraisable, "__defaults__", (seen.append,))
    other = types.SimpleNamespace(exc_value=ValueError("real trouble"))
    demo._quiet_unraisable(other)
    demo._quiet_unraisable(types.SimpleNamespace(exc_value=demo._Stop()))
    assert seen == [other]
