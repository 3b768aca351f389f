"""What a server says about itself: runtime, version, configuration, models.

Asked once before a run (and, for Ollama, once after: it loads a model on
the first request), never inside a timed request. Every probe is a short
GET/POST with its own timeout; a server that does not answer a probe is
simply a server that did not say, never an error. What was asked and what
came back is kept in `probes`, so run-metadata.json can show its sources.

What each runtime tells:

* llama.cpp `llama-server`, `GET /props`: context size per slot
  (`default_generation_settings.n_ctx`), parallel slots (`total_slots`),
  the model file and alias, the build (`build_info`); `GET /v1/models`
  the alias it serves. It serves one model whatever name a request asks
  for, and it honours the per-request `cache_prompt` switch.
* Ollama, `GET /api/version`, `POST /api/show` (parameters such as
  `num_ctx`, `num_thread`, `num_gpu`, `num_batch`; quantization and size
  from `details`), `GET /api/ps` (the context length and GPU share of the
  model as loaded).
* Any other OpenAI-compatible server: `GET /v1/models` (the model ids it
  serves), nothing about its configuration: pass `--run-metadata`.

Threads, GPU layers and batch size are not reported by llama-server; the
`--run-metadata` file supplies what the server does not say.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

from benchpack.adapters import wire
from benchpack.results.provenance import SCRIPTED_HEADER, SCRIPTED_RUNTIME

PROBE_TIMEOUT_S = 3.0
LLAMA_SERVER_SOURCE = "llama-server /props"
OLLAMA_SOURCE = "ollama /api/show"
OLLAMA_PS_SOURCE = "ollama /api/ps"
FILE_SOURCE = "run-metadata file"

# Ollama Modelfile parameters -> runtime.config keys.
_OLLAMA_PARAMETERS = {
    "num_ctx": "context_size",
    "num_thread": "threads",
    "num_gpu": "gpu_layers",
    "num_batch": "batch_size",
    "num_parallel": "parallel_slots",
}
# llama-server /props `default_generation_settings` keys -> runtime.config keys,
# for builds that report more than the context size.
_LLAMA_SETTINGS = {
    "n_ctx": "context_size",
    "n_batch": "batch_size",
    "n_ubatch": "ubatch_size",
    "n_threads": "threads",
    "n_threads_batch": "threads_batch",
    "n_gpu_layers": "gpu_layers",
}


class ServerInfo(msgspec.Struct):
    runtime_name: str | None = None
    runtime_version: str | None = None
    config: dict = msgspec.field(default_factory=dict)
    config_source: str | None = None
    served_models: list[str] = msgspec.field(default_factory=list)  # what the server lists or resolves
    # Set when the server answers every request with this one model whatever
    # the request names (llama-server), so the response's echo is not proof.
    sole_model: str | None = None
    model_file: str | None = None  # a file name, never a local path
    honours_cache_prompt: bool = False  # the per-request "cache_prompt" switch
    # The server said it is the built-in scripted endpoint (its header or Server name):
    # the run is demo data wherever it goes (benchpack.results.provenance.is_scripted).
    scripted: bool = False
    probes: list[dict] = msgspec.field(default_factory=list)
    # What the server says about the model's size (plausibility bounds read it):
    # {"params", "size_bytes", "expert_count", "expert_used_count", "size_source"}, only the keys it gave.
    model_size: dict = msgspec.field(default_factory=dict)

    def to_metadata(self) -> dict:
        return {
            "runtime_name": self.runtime_name, "runtime_version": self.runtime_version,
            "config": dict(self.config), "config_source": self.config_source,
            "served_models": list(self.served_models), "model_file": self.model_file,
        }


def server_base(endpoint: str) -> str:
    """`http://host:port/prefix` without the API path the adapters append."""
    parts = urlsplit(endpoint)
    path = parts.path.rstrip("/")
    for suffix in ("/v1/chat/completions", "/chat/completions", "/api/generate", "/v1"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class _Prober:
    def __init__(self, base: str, client: Any, info: ServerInfo):
        self.base, self.client, self.info = base, client, info
        self.errors = _client_errors(client)

    def ask(self, method: str, path: str, body: dict | None = None) -> Any:
        """The JSON a probe returned, or None (recorded either way)."""
        record: dict[str, Any] = {"request": f"{method} {path}"}
        self.info.probes.append(record)
        try:
            response = self.client.request(method, self.base + path, json=body, timeout=PROBE_TIMEOUT_S)
        except self.errors as exc:
            record["result"] = f"no answer ({type(exc).__name__})"
            return None
        record["result"] = f"HTTP {response.status_code}"
        server = response.headers.get("server", "")
        scripted = response.headers.get(SCRIPTED_HEADER) or (server if server.startswith(SCRIPTED_RUNTIME) else "")
        if scripted:
            record["scripted"] = scripted[:200]
            self.info.scripted = True
        if response.status_code != 200:
            return None
        try:
            return response.json()
        except (ValueError, UnicodeDecodeError):
            record["result"] += ", not JSON"
            return None


def probe_client(base: str | None = None) -> Any:
    """A client for the probes of the server at `base` (None: a plain http:// one). For a plain http:// server,
    wire's PlainClient: no
    httpx (whose import is a share of a short run's whole cost); else an httpx client over the adapters'
    transport, which builds httpx's own (and its SSL context: tens of ms of CPU) only for an https:// URL."""
    if base is None or wire.plain_url(base):
        return wire.PlainClient(kernel_stamps=False)
    import httpx

    from benchpack.adapters.fasttransport import FastHTTPTransport

    return httpx.Client(transport=FastHTTPTransport(kernel_stamps=False), follow_redirects=False)


def _client_errors(client: Any) -> type[Exception]:
    """What a probe through `client` raises when the server does not answer: wire's errors, or httpx's."""
    if isinstance(client, wire.PlainClient):
        return wire.TransportError
    import httpx  # an httpx client: httpx is loaded already

    return httpx.HTTPError


def probe_server(adapter_id: str, endpoint: str, model: str, *, client: Any = None) -> ServerInfo:
    """Ask the server what it is and how it is configured; never raises for a silent server."""
    own = client is None
    base = server_base(endpoint)
    client = client or probe_client(base)
    info = ServerInfo()
    try:
        prober = _Prober(base, client, info)
        if adapter_id == "ollama-generate":
            _probe_ollama(prober, model)
        else:
            _probe_openai(prober)
    finally:
        if own:
            client.close()
    return info


def announced_runtime(info: ServerInfo) -> tuple[str | None, str | None]:
    """The runtime name and version a run records. The scripted endpoint is named for what it is,
    whatever it imitates (`--like llama-server`); the probe logic keeps what it imitates."""
    if info.scripted:
        version = info.runtime_version if info.runtime_version not in (None, SCRIPTED_RUNTIME) else "scripted"
        return SCRIPTED_RUNTIME, version
    return info.runtime_name, info.runtime_version


def probe_loaded_model(adapter_id: str, endpoint: str, model: str, info: ServerInfo, *,
                       client: Any = None) -> None:
    """After the run: what only a loaded model reports (Ollama's /api/ps)."""
    if adapter_id != "ollama-generate" or info.runtime_name != "ollama":
        return
    own = client is None
    base = server_base(endpoint)
    client = client or probe_client(base)
    try:
        _probe_ollama_ps(_Prober(base, client, info), model)
    finally:
        if own:
            client.close()


# --- llama-server and other OpenAI-compatible servers ------------------------


def _probe_openai(prober: _Prober) -> None:
    info = prober.info
    props = prober.ask("GET", "/props")
    if isinstance(props, dict) and ("default_generation_settings" in props or "total_slots" in props):
        _take_llama_props(info, props)
    models = prober.ask("GET", "/v1/models")
    ids = _model_ids(models)
    info.model_size = llama_model_size(models)
    if ids:
        info.served_models = ids
        if info.runtime_name == "llama-server" and info.sole_model is None:
            info.sole_model = ids[0]


def _take_llama_props(info: ServerInfo, props: dict) -> None:
    info.runtime_name = "llama-server"
    info.honours_cache_prompt = True
    build = props.get("build_info")
    if isinstance(build, str) and build:
        info.runtime_version = build
    settings = props.get("default_generation_settings")
    settings = settings if isinstance(settings, dict) else {}
    config: dict[str, Any] = {}
    for key, name in _LLAMA_SETTINGS.items():
        value = settings.get(key, props.get(key))
        if _is_count(value):
            config[name] = value
    if _is_count(props.get("total_slots")):
        config["parallel_slots"] = props["total_slots"]
    info.config, info.config_source = config, LLAMA_SERVER_SOURCE
    path = props.get("model_path")
    if isinstance(path, str) and path:
        info.model_file = posixpath.basename(path.replace("\\", "/"))
    alias = props.get("model_alias")
    if isinstance(alias, str) and alias:
        info.sole_model = alias


def llama_model_size(models: Any) -> dict:
    """llama-server's `/v1/models` `data[0].meta`: `n_params` and `size` (bytes of weights)."""
    data = models.get("data") if isinstance(models, dict) else None
    meta = data[0].get("meta") if isinstance(data, list) and data and isinstance(data[0], dict) else None
    if not isinstance(meta, dict):
        return {}
    size = {key: meta[name] for name, key in (("n_params", "params"), ("size", "size_bytes"))
            if _is_count(meta.get(name)) and meta[name] > 0}
    return {**size, "size_source": "llama-server /v1/models meta"} if size else {}


def ollama_model_size(show: Any) -> dict:
    """Ollama `/api/show` `model_info`: the parameter count and, for a mixture of experts, its expert counts."""
    info = show.get("model_info") if isinstance(show, dict) else None
    if not isinstance(info, dict):
        return {}
    size: dict[str, Any] = {}
    for key, value in info.items():
        if not _is_count(value) or value <= 0:
            continue
        if key == "general.parameter_count":
            size["params"] = value
        elif key.endswith(".expert_count"):
            size["expert_count"] = value
        elif key.endswith(".expert_used_count"):
            size["expert_used_count"] = value
    return {**size, "size_source": "ollama /api/show model_info"} if "params" in size else {}


def _model_ids(models: Any) -> list[str]:
    data = models.get("data") if isinstance(models, dict) else None
    if not isinstance(data, list):
        return []
    return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"]]


# --- Ollama --------------------------------------------------------------------


def _probe_ollama(prober: _Prober, model: str) -> None:
    info = prober.info
    version = prober.ask("GET", "/api/version")
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        info.runtime_name, info.runtime_version = "ollama", version["version"]
    show = prober.ask("POST", "/api/show", {"model": model})
    if not isinstance(show, dict):
        return
    info.runtime_name = "ollama"
    info.served_models = [model]
    info.model_size = ollama_model_size(show)
    config: dict[str, Any] = {}
    details = show.get("details") if isinstance(show.get("details"), dict) else {}
    for key, name in (("quantization_level", "quantization"), ("parameter_size", "parameter_size"),
                      ("format", "format"), ("family", "family")):
        if isinstance(details.get(key), str) and details[key]:
            config[name] = details[key]
    config.update(parse_ollama_parameters(show.get("parameters")))
    if config:
        info.config, info.config_source = config, OLLAMA_SOURCE


def parse_ollama_parameters(text: Any) -> dict:
    """`num_ctx 8192\\nstop "<|im_end|>"` -> {"context_size": 8192}; only the keys that configure the runtime."""
    config: dict[str, Any] = {}
    if not isinstance(text, str):
        return config
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0] in _OLLAMA_PARAMETERS:
            try:
                config[_OLLAMA_PARAMETERS[parts[0]]] = int(parts[1].strip())
            except ValueError:
                continue
    return config


def _same_ollama_model(a: str, b: str) -> bool:
    return a == b or a.removesuffix(":latest") == b.removesuffix(":latest")


def _probe_ollama_ps(prober: _Prober, model: str) -> None:
    info = prober.info
    running = prober.ask("GET", "/api/ps")
    entries = running.get("models") if isinstance(running, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        names = [entry.get(k) for k in ("name", "model") if isinstance(entry.get(k), str)]
        if not any(_same_ollama_model(name, model) for name in names):
            continue
        config = dict(info.config)
        if _is_count(entry.get("context_length")):
            config["context_size"] = entry["context_length"]
        size, vram = entry.get("size"), entry.get("size_vram")
        if _is_count(size) and size > 0 and _is_count(vram):
            config["gpu_offload"] = f"{round(100 * vram / size)}%"
        info.config = config
        info.config_source = OLLAMA_SOURCE + " + /api/ps" if info.config_source == OLLAMA_SOURCE else OLLAMA_PS_SOURCE
        return


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# --- the served model ----------------------------------------------------------


def served_model(info: ServerInfo, response_model: str | None) -> str | None:
    """The model that answered: the server's only model when it serves just one
    (llama-server answers any name), else the name in its response."""
    return info.sole_model or response_model


def model_mismatch(requested: str, served: str | None) -> str | None:
    """A warning when the server served something else than `--model` named."""
    if not served or served == requested or _same_ollama_model(served, requested):
        return None
    return f"asked for model {requested!r}, the server served {served!r}"


def merge_config(info: ServerInfo, declared: Any, warn: Callable[[str], None]) -> tuple[dict, str | None]:
    """runtime.config and its source: the server's values win for the keys it
    reports; the run-metadata file fills what the server does not say. A
    declared value the server contradicts is reported, and the server's kept."""
    declared = declared if isinstance(declared, dict) else {}
    server = dict(info.config)
    for key, value in declared.items():
        if key in server and server[key] != value:
            warn(f"run-metadata runtime.config.{key} is {json.dumps(value)}, the server reports "
                 f"{json.dumps(server[key])}; recorded the server's")
    merged = {**declared, **server}
    if server and any(key not in server for key in declared):
        source = f"{info.config_source} + {FILE_SOURCE}"
    elif server:
        source = info.config_source
    elif declared:
        source = FILE_SOURCE
    else:
        source = None
    return merged, source
