import pytest
from django.core.exceptions import ImproperlyConfigured

from registry_site.env import env_bool, env_choice, env_int, env_str


def test_it_fails_loudly_on_a_bad_boolean(monkeypatch):
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG", False)


def test_it_fails_loudly_on_a_bad_integer(monkeypatch):
    monkeypatch.setenv("SUBMISSION_MAX_BYTES", "20MB")
    with pytest.raises(ImproperlyConfigured, match="not an integer"):
        env_int("SUBMISSION_MAX_BYTES", 1)


def test_it_requires_variables_without_a_default(monkeypatch):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY is required"):
        env_str("SECRET_KEY")


def test_it_refuses_unknown_modes(monkeypatch):
    monkeypatch.setenv("BENCHPACK_ENV", "staging")
    with pytest.raises(ImproperlyConfigured, match="must be one of local, production, test"):
        env_choice("BENCHPACK_ENV", "local", {"local", "test", "production"})


def test_it_has_no_default_secret_in_production():
    import subprocess
    import sys

    env = {"BENCHPACK_ENV": "production", "ALLOWED_HOSTS": "example.org", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", "import registry_site.settings"], env=env,
                          capture_output=True, text=True, cwd=str(__import__("pathlib").Path(__file__).parents[2]))
    assert proc.returncode != 0
    assert "SECRET_KEY is required" in proc.stderr
