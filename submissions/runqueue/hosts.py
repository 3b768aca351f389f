"""Runner hosts: registering them and their allowlists, and their hardware.

Registration is an operator's act (`manage.py runner_host …`, or the admin);
every entry is checked here so a bad URL, address or pack is refused with
one message before anything is stored.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from pathlib import Path

from django.utils import timezone

from benchpack.adapters import ADAPTER_IDS
from benchpack.adapters.pinned import canonical_address, split_endpoint, system_resolver
from benchpack.errors import BenchpackError
from benchpack.packs.loader import MANIFEST_NAME, bundled_packs_dir, load_pack
from benchpack.registry.fingerprint import hardware_class
from submissions.runqueue.models import HostEndpoint, HostPack, RunnerHost

log = logging.getLogger(__name__)


class AllowlistError(ValueError):
    """An allowlist entry that cannot be stored; the message says what to fix."""


def endpoint_fields(url: str, adapter: str, models: list[str], runtime: str, runtime_version: str,
                    addresses: list[str] | None = None) -> dict:
    """Checked fields of an endpoint entry. Without `addresses`, the URL's host is
    resolved now (on the machine registering it) and those addresses are allowed."""
    try:
        _, host, port = split_endpoint(url)
    except ValueError as exc:
        raise AllowlistError(str(exc)) from None
    if adapter not in ADAPTER_IDS:
        raise AllowlistError(f"adapter {adapter!r}: choose one of {', '.join(ADAPTER_IDS)}")
    if not models:
        raise AllowlistError("name at least one model served at this endpoint (--model NAME[=QUANTIZATION])")
    served = []
    for spec in models:
        name, _, quantization = spec.partition("=")
        if not name.strip():
            raise AllowlistError(f"model {spec!r}: the name is empty")
        served.append({"name": name.strip(), "quantization": quantization.strip()})
    if not runtime.strip() or not runtime_version.strip():
        raise AllowlistError("runtime name and version are required: they are part of every result's fingerprint")
    if addresses:
        try:
            allowed = [canonical_address(a) for a in addresses]
        except ValueError as exc:
            raise AllowlistError(f"--address: {exc}") from None
    else:
        try:
            allowed = system_resolver(host, port)
        except OSError as exc:
            raise AllowlistError(f"cannot resolve {host} ({exc}); give the allowed --address explicitly") from None
    return {"url": url, "adapter": adapter, "served_models": served, "runtime_name": runtime.strip(),
            "runtime_version": runtime_version.strip(), "addresses": allowed}


def allow_endpoint(host: RunnerHost, name: str, **fields) -> HostEndpoint:
    entry, _ = HostEndpoint.objects.update_or_create(host=host, name=name, defaults={**fields, "enabled": True})
    return entry


def pack_entry_fields(pack_id: str, version: str | None = None, archive: Path | None = None) -> dict:
    """A bundled pack (by id, optionally pinned to the checkout's version) or a pack archive checked by the core loader."""
    if archive is None:
        path = bundled_packs_dir() / pack_id
        if not (path / MANIFEST_NAME).is_file():
            known = ", ".join(sorted(p.parent.name for p in bundled_packs_dir().glob(f"*/{MANIFEST_NAME}")))
            raise AllowlistError(f"no bundled pack {pack_id!r} (bundled: {known}); add other packs with --archive")
        pack = _load(path)
        if version and version != pack.version:
            raise AllowlistError(f"bundled {pack_id} is version {pack.version} in this checkout, not {version}")
        return {"pack_id": pack.id, "version": pack.version, "archive": None, "archive_sha256": ""}
    from submissions.runqueue.runner.execute import RunRefused, extract_pack_archive

    data = Path(archive).read_bytes()
    with tempfile.TemporaryDirectory(prefix="benchpack-pack-") as tmp:
        try:
            pack = _load(extract_pack_archive(data, Path(archive).name, Path(tmp)))
        except (RunRefused, BenchpackError) as exc:
            raise AllowlistError(f"{archive}: {exc}") from None
    if pack.id != pack_id or (version and version != pack.version):
        raise AllowlistError(f"{archive} holds {pack.id} {pack.version}, not {pack_id} {version or ''}".rstrip())
    return {"pack_id": pack.id, "version": pack.version, "archive": data,
            "archive_sha256": hashlib.sha256(data).hexdigest()}


def _load(path: Path):
    try:
        return load_pack(path)
    except BenchpackError as exc:
        raise AllowlistError("; ".join(exc.lines())) from None


def allow_pack(host: RunnerHost, **fields) -> HostPack:
    entry, _ = HostPack.objects.update_or_create(
        host=host, pack_id=fields["pack_id"], version=fields["version"], defaults={**fields, "enabled": True}
    )
    return entry


def record_hardware(host: RunnerHost, hardware: dict) -> None:
    """Keep the host's latest report, for the operator to see. It never sets the hardware class: that is
    the operator's (approve_hardware), so a host cannot make itself eligible to reproduce other runs."""
    RunnerHost.objects.filter(pk=host.pk).update(hardware=hardware, hardware_reported_at=timezone.now())


def approve_hardware(host: RunnerHost, hardware_class_name: str | None = None) -> str:
    """An operator fixes the host's hardware class: the one given, or the class of its latest report
    (after the operator has looked at it: `manage.py runner_host list`). Only this changes it."""
    host.refresh_from_db(fields=["hardware"])
    chosen = (hardware_class_name or "").strip() or (hardware_class(host.hardware) or "")
    if not chosen:
        raise AllowlistError(f"runner host {host.name} has reported no hardware with a known class yet; start its "
                             "worker, or give the class with --hardware-class")
    if len(chosen) > RunnerHost._meta.get_field("hardware_class").max_length:
        raise AllowlistError("--hardware-class: at most 255 characters")
    RunnerHost.objects.filter(pk=host.pk).update(hardware_class=chosen)
    host.hardware_class = chosen
    return chosen
