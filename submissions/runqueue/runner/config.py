"""A runner worker's settings, from its environment (deploy/runner.env.example); no Django settings."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

HOST_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$")


class ConfigError(SystemExit):
    """A missing or bad variable: the worker does not start, and says which."""


@dataclass(frozen=True)
class RunnerConfig:
    host: str
    registry_url: str
    token: str
    broker_url: str
    broker_dir: Path | None  # the filesystem broker's folder (the demo)
    heartbeat_s: float
    visibility_timeout_s: int

    @property
    def queue(self) -> str:
        return f"runs.{self.host}"


def _token(env) -> str:
    token = env.get("BENCHPACK_HOST_TOKEN", "").strip()
    path = env.get("BENCHPACK_HOST_TOKEN_FILE", "").strip()
    if not token and path:
        try:
            token = Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"BENCHPACK_HOST_TOKEN_FILE={path}: {exc.strerror}") from None
    return token


def load(env=None) -> RunnerConfig:
    env = os.environ if env is None else env
    host = env.get("BENCHPACK_RUNNER_HOST", "").strip()
    if not HOST_RE.match(host):
        raise ConfigError(f"BENCHPACK_RUNNER_HOST={host!r}: set it to the registered host name "
                          "(lower-case letters, digits and '-')")
    registry = env.get("BENCHPACK_REGISTRY_URL", "").strip().rstrip("/")
    if not registry.startswith(("http://", "https://")):
        raise ConfigError(f"BENCHPACK_REGISTRY_URL={registry!r}: the registry's base URL, e.g. https://registry.example.org")
    token = _token(env)
    if not token.startswith("bph_"):
        raise ConfigError("BENCHPACK_HOST_TOKEN (or BENCHPACK_HOST_TOKEN_FILE): the host token printed by "
                          f"`manage.py runner_host add {host}` (bph_…)")
    broker = env.get("CELERY_BROKER_URL", "").strip()
    if not broker:
        raise ConfigError("CELERY_BROKER_URL: this host's broker login, printed by `manage.py runner_host add`")
    broker_dir = env.get("BENCHPACK_BROKER_DIR", "").strip()
    if broker.startswith("filesystem") and not broker_dir:
        raise ConfigError("CELERY_BROKER_URL=filesystem:// needs BENCHPACK_BROKER_DIR (the registry's broker folder)")
    try:
        heartbeat = float(env.get("BENCHPACK_HEARTBEAT_S", "15"))
        visibility = int(env.get("CELERY_VISIBILITY_TIMEOUT_S", "25200"))
    except ValueError as exc:
        raise ConfigError(f"BENCHPACK_HEARTBEAT_S / CELERY_VISIBILITY_TIMEOUT_S: {exc}") from None
    return RunnerConfig(host=host, registry_url=registry, token=token, broker_url=broker,
                        broker_dir=Path(broker_dir) if broker_dir else None, heartbeat_s=max(0.5, heartbeat),
                        visibility_timeout_s=visibility)
