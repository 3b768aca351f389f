"""Preparing and packaging one run on a runner host, with the core library.

`prepare_run` checks the request against the host's allowlists again (they
may have changed since it was queued), pins the endpoint's address, loads
the pack (bundled, or an operator-added archive through the core loader)
and builds the runner's options and a pinned adapter. `bundle_result` turns
the result directory into a bundle archive with the core bundle code.
Everything happens in the temporary directory the caller owns.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import httpx

from benchpack.bundles import archives
from benchpack.adapters import Adapter, get_adapter
from benchpack.adapters.pinned import AddressNotAllowed, Pin, PinnedTransport, pin_endpoint
from benchpack.adapters.transport import LeanClient
from benchpack.bundles.create import create_bundle
from benchpack.errors import BenchpackError
from benchpack.packs.loader import MANIFEST_NAME, Pack, bundled_packs_dir, load_pack
from benchpack.run.runner import RunOptions, effective_pack
from submissions.runqueue.models import HostPack, RunRequest

# The host's claim in the bundle; the registry earns the published value itself (runner-host, …).
PROVENANCE = "self-reported"


class RunRefused(Exception):
    """The run cannot start; the message is the request's failure reason."""


@dataclass
class PreparedRun:
    pack: Pack  # as it runs: the request's repetitions applied (runner.effective_pack)
    options: RunOptions
    adapter: Adapter
    probe_client: httpx.Client  # the runner's server probes go through the pin too
    pin: Pin


def prepare_run(request: RunRequest, workdir: Path) -> PreparedRun:
    host, endpoint, entry = request.host, request.endpoint, request.pack
    if endpoint.host_id != host.pk or not endpoint.enabled:
        raise RunRefused(f"endpoint {endpoint.name} is no longer on the allowlist of {host.name}")
    if request.model not in endpoint.model_names():
        raise RunRefused(f"model {request.model} is no longer allowlisted for {endpoint}")
    if entry.host_id != host.pk or not entry.enabled:
        raise RunRefused(f"pack {entry} is no longer on the pack allowlist of {host.name}")
    try:
        pin = pin_endpoint(endpoint.url, endpoint.addresses)
    except (AddressNotAllowed, ValueError) as exc:
        raise RunRefused(f"endpoint {endpoint} refused before any request: {exc}") from None
    pack = load_host_pack(entry, workdir / "pack")
    quantization = endpoint.quantization_of(request.model)
    options = RunOptions(
        adapter=endpoint.adapter,
        model=request.model,
        endpoint=endpoint.url,
        out=workdir / "results" / result_label(request, pack),
        host_label=host.name,
        run_metadata={
            "runtime": {"name": endpoint.runtime_name, "version": endpoint.runtime_version},
            "model": {"quantization": quantization} if quantization else {},
            "notes": f"Run by runner host {host.name} for run request {request.pk}.",
        },
        openai_stream_usage=request.openai_stream_usage,
        repetitions=request.repetitions,
    )
    adapter = get_adapter(endpoint.adapter, LeanClient(PinnedTransport(pin)))
    return PreparedRun(pack=effective_pack(pack, options), options=options, adapter=adapter,
                       probe_client=LeanClient(PinnedTransport(pin)), pin=pin)


def result_label(request: RunRequest, pack: Pack) -> str:
    """The result directory's name, which becomes the bundle's run label."""
    model = re.sub(r"[^A-Za-z0-9._-]+", "-", request.model).strip("-.") or "model"
    return f"{pack.id}-{model[:60]}-{request.host.name}-{str(request.pk)[:8]}"


def load_host_pack(entry: HostPack, into: Path) -> Pack:
    if entry.source == "bundled":
        path = bundled_packs_dir() / entry.pack_id
        if not (path / MANIFEST_NAME).is_file():
            raise RunRefused(f"bundled pack {entry.pack_id} is not in this worker's checkout")
    else:
        path = extract_pack_archive(bytes(entry.archive), f"{entry.pack_id}-{entry.version}.tar.gz", into)
    try:
        pack = load_pack(path)
    except BenchpackError as exc:
        raise RunRefused(f"pack {entry} does not load: " + "; ".join(exc.lines())) from None
    if (pack.id, pack.version) != (entry.pack_id, entry.version):
        raise RunRefused(
            f"pack {entry} is {pack.id} {pack.version} on this worker; update the worker's checkout or the allowlist"
        )
    return pack


def extract_pack_archive(data: bytes, name: str, into: Path) -> Path:
    """A pack archive (its benchpack.toml at the top or in one folder) extracted safely; the pack's directory."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / ("upload." + archives.archive_kind(Path(name)))
    archive.write_bytes(data)
    root = archives.safe_extract(archive, into / "extracted")
    archive.unlink()
    if (root / MANIFEST_NAME).is_file():
        return root
    manifests = sorted(root.glob(f"*/{MANIFEST_NAME}"))
    if len(manifests) != 1:
        raise RunRefused(f"{name}: expected one {MANIFEST_NAME} at the top or in one folder, found {len(manifests)}")
    return manifests[0].parent


@dataclass
class BundledResult:
    name: str
    data: bytes
    sha256: str


def bundle_result(result_dir: Path, workdir: Path) -> BundledResult:
    bundle = create_bundle([result_dir], workdir / "bundle", PROVENANCE)
    archive = archives.pack_archive(bundle, workdir / f"{result_dir.name}.tar.gz")
    data = archive.read_bytes()
    return BundledResult(name=archive.name, data=data, sha256=hashlib.sha256(data).hexdigest())
