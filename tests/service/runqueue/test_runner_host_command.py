"""manage.py runner_host: register a host and its allowlists; refuse bad entries; --dry-run stores nothing."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from submissions.runqueue.models import HostEndpoint, HostPack, RunnerHost


def test_it_registers_a_host_with_an_endpoint_and_packs(host_owner, capsys, tmp_path):
    call_command("runner_host", "add", "gpu-1", "--owner", "lab@example.org")
    call_command("runner_host", "allow-endpoint", "gpu-1", "llama", "--url", "http://localhost:8081/v1",
                 "--adapter", "openai-chat", "--model", "qwen2.5-7b=Q4_K_M", "--runtime", "llama.cpp",
                 "--runtime-version", "b5040")
    call_command("runner_host", "allow-pack", "gpu-1", "runtime-sweep")
    host = RunnerHost.objects.get(name="gpu-1")
    endpoint = host.endpoints.get()
    assert "127.0.0.1" in endpoint.addresses  # resolved at registration, pinned at every run
    assert endpoint.served_models == [{"name": "qwen2.5-7b", "quantization": "Q4_K_M"}]
    from benchpack.packs.loader import bundled_packs_dir, load_pack

    version = load_pack(bundled_packs_dir() / "runtime-sweep").version  # the checkout's own
    assert host.packs.get().version == version
    call_command("runner_host", "list")
    out = capsys.readouterr().out
    assert "gpu-1  offline  owner lab@example.org" in out and f"pack runtime-sweep {version} (bundled)" in out


def test_it_accepts_a_pack_archive_checked_by_the_core_loader(host, tmp_path):
    import shutil

    from benchpack.bundles.archives import pack_archive
    from benchpack.packs.loader import bundled_packs_dir

    shutil.copytree(bundled_packs_dir() / "smoke-chat", tmp_path / "pack")
    text = (tmp_path / "pack" / "benchpack.toml").read_text().replace('id = "smoke-chat"', 'id = "lab-smoke"')
    (tmp_path / "pack" / "benchpack.toml").write_text(text)
    archive = pack_archive(tmp_path / "pack", tmp_path / "lab-smoke.tar.gz")
    call_command("runner_host", "allow-pack", "gpu-a", "lab-smoke", "--archive", str(archive))
    entry = HostPack.objects.get(pack_id="lab-smoke")
    assert entry.source == "archive" and entry.version == "0.1.0"

    (tmp_path / "pack" / "benchpack.toml").write_text(text.replace('mode = "contains"', 'mode = "telepathy"'))
    broken = pack_archive(tmp_path / "pack", tmp_path / "broken.tar.gz")
    with pytest.raises(CommandError, match="scoring"):
        call_command("runner_host", "allow-pack", "gpu-a", "lab-smoke", "--archive", str(broken))


@pytest.mark.parametrize("args, message", [
    (["--url", "http://user:pw@10.0.0.1/v1"], "credentials in the URL are not allowed"),
    (["--url", "ftp://10.0.0.1/v1"], "only http:// and https://"),
    (["--url", "http://10.0.0.1/v1", "--address", "not-an-ip"], "--address"),
    (["--url", "http://10.0.0.1/v1", "--adapter", "magic"], "adapter 'magic'"),
])
def test_it_refuses_a_bad_endpoint_entry(host, args, message):
    base = {"--url": "http://10.0.0.1:8081/v1", "--adapter": "openai-chat", "--model": "m",
            "--runtime": "llama.cpp", "--runtime-version": "b1"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    argv = [item for pair in base.items() for item in pair]
    with pytest.raises(CommandError, match=message):
        call_command("runner_host", "allow-endpoint", "gpu-a", "other", *argv)
    assert not HostEndpoint.objects.filter(name="other").exists()


def test_dry_run_stores_nothing(host_owner, capsys):
    call_command("runner_host", "--dry-run", "add", "gpu-9", "--owner", "lab@example.org")
    assert "would register runner host gpu-9" in capsys.readouterr().out
    assert not RunnerHost.objects.filter(name="gpu-9").exists()


def test_bad_host_names_are_refused(host_owner):
    with pytest.raises(CommandError, match="lower-case letters"):
        call_command("runner_host", "add", "GPU One", "--owner", "lab@example.org")


def test_add_rotate_and_revoke_print_the_token_once_and_store_only_its_hash(host_owner, capsys, settings):
    import re

    from submissions.runqueue import tokens

    call_command("runner_host", "--dry-run", "add", "gpu-t", "--owner", "lab@example.org")
    assert "would issue a host token for gpu-t" in capsys.readouterr().out
    assert not RunnerHost.objects.filter(name="gpu-t").exists()

    call_command("runner_host", "add", "gpu-t", "--owner", "lab@example.org")
    first = re.search(r"BENCHPACK_HOST_TOKEN=(bph_\S+)", capsys.readouterr().out).group(1)
    host = RunnerHost.objects.get(name="gpu-t")
    assert host.token_hash == tokens.digest(first) and tokens.host_for(first) == host

    call_command("runner_host", "--dry-run", "rotate", "gpu-t")
    assert "would replace the host token of gpu-t" in capsys.readouterr().out
    assert tokens.host_for(first) == host
    call_command("runner_host", "rotate", "gpu-t")
    second = re.search(r"BENCHPACK_HOST_TOKEN=(bph_\S+)", capsys.readouterr().out).group(1)
    assert tokens.host_for(first) is None and tokens.host_for(second) == host

    call_command("runner_host", "--dry-run", "revoke", "gpu-t")
    assert tokens.host_for(second) == host
    call_command("runner_host", "revoke", "gpu-t")
    assert "host token ended" in capsys.readouterr().out
    assert tokens.host_for(second) is None
    call_command("runner_host", "list")
    assert "gpu-t  offline  owner lab@example.org  hardware not approved  no token" in capsys.readouterr().out


def test_a_broker_that_refuses_stores_nothing(host_owner, settings):
    settings.RUNNER_BROKER_URL = "amqp://admin:pw@127.0.0.1:5672/benchpack"
    settings.RABBITMQCTL = "false"  # a rabbitmqctl that fails
    with pytest.raises(CommandError, match="the broker refused: false list_vhosts"):
        call_command("runner_host", "add", "gpu-x", "--owner", "lab@example.org")
    assert not RunnerHost.objects.filter(name="gpu-x").exists()
