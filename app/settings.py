"""The one place LogoMesh reads its environment: ``LOGOMESH_*`` variables and an optional ``.env`` file.

Build it once at start-up (``Settings()``) and pass it explicitly. A missing or malformed value fails right
there with a message naming the variable (``LOGOMESH_PUBLIC_URL: must be an absolute http(s) URL, …``). An empty
variable (``LOGOMESH_HOME=``) counts as unset: the default applies.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings import SettingsError as SourceError

from sandbox.runtime import SandboxRuntime


class SettingsError(ValueError):
    """A setting is missing or malformed; ``variable`` names the environment variable."""

    def __init__(self, variable: str, message: str) -> None:
        self.variable = variable
        super().__init__(f"{variable}: {message}")


def default_home() -> Path:
    """Where the embedded default keeps its state (the DBOM ledger and its private signing key) when
    ``LOGOMESH_HOME`` is unset: the user's data directory, never the working directory, where a run inside the
    reviewed repository would leave the key for ``git add -A`` to stage. ``$XDG_DATA_HOME/logomesh`` when that is
    an absolute path (the XDG spec says to ignore a relative one), else ``~/.local/share/logomesh``."""
    import os

    xdg_data_home = os.environ.get("XDG_DATA_HOME", "")
    if xdg_data_home and Path(xdg_data_home).is_absolute():
        return Path(xdg_data_home) / "logomesh"
    try:
        return Path.home() / ".local" / "share" / "logomesh"
    except RuntimeError as exc:  # no $HOME and no passwd entry (an arbitrary container uid)
        raise SettingsError("LOGOMESH_HOME", "not set, and there is no home directory to default to") from exc


ENV_PREFIX = "LOGOMESH_"

# URL settings and the example each error shows; BASE_URLS lose a trailing slash, so that f"{base}/path" never
# doubles one
URL_EXAMPLES = {
    "github_api_url": "https://api.github.com",
    "github_web_url": "https://github.com",
    "public_url": "https://logomesh.example.com",
    "llm_base_url": "https://api.anthropic.com or http://localhost:11434/v1",
    "sandbox_index_url": "https://pypi.org/simple",
    "sandbox_npm_registry": "https://registry.npmjs.org/",
}
BASE_URLS = ("github_api_url", "github_web_url", "public_url")
LLM_ANTHROPIC_DEFAULTS = {"llm_model": "claude-sonnet-4-6", "llm_base_url": "https://api.anthropic.com"}
LLM_OPENAI_EXAMPLES = {"llm_model": "qwen2.5:7b-instruct", "llm_base_url": "http://localhost:11434/v1 (Ollama)"}


def variable(field: str) -> str:
    """The environment variable of a settings field: ``public_url`` → ``LOGOMESH_PUBLIC_URL``."""
    return ENV_PREFIX + field.upper()


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=".env", extra="ignore", frozen=True,
                                      env_ignore_empty=True)

    # where local state lives (ledger, keys) for the embedded default; see default_home
    home: Path = Field(default_factory=default_home)
    rubric_path: Path | None = None

    # --- the GitHub App (serve / worker); DBOM links use public_url below ---
    app_id: int | None = Field(default=None, ge=1)
    private_key: SecretStr | None = Field(default=None, description="the App's private key, PEM text")
    private_key_path: Path | None = None
    webhook_secret: SecretStr | None = None
    github_api_url: str = "https://api.github.com"
    github_web_url: str = "https://github.com"
    github_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    check_name: str = Field(default="LogoMesh", min_length=1, max_length=100)
    # when the App comments on a PR (a repository's ``.logomesh.yml`` ``comment:`` wins): always; on-change —
    # when the verdict is not pass or a LogoMesh comment is already there (kept current); never — check run only
    comment: Literal["always", "on-change", "never"] = "on-change"
    # when the App posts a PR review with a line comment per finding on a changed line (``.logomesh.yml``
    # ``review_comments:`` wins): fail — on a failing verdict; always; never. The review is a COMMENT unless
    # ``review_request_changes`` asks for REQUEST_CHANGES on a fail.
    review_comments: Literal["fail", "always", "never"] = "fail"
    review_request_changes: bool = False
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = Field(default="logomesh:", min_length=1, max_length=64)
    queue_name: str = Field(default="logomesh:queue", min_length=1, max_length=128)
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    concurrency: int = Field(default=2, ge=1, le=64)
    job_timeout_seconds: int = Field(default=1800, ge=10, le=7200)
    max_tries: int = Field(default=5, ge=1, le=20)
    # how long a running job's claims (arq's in-progress mark, the installation's lease, the PR's lock) outlive
    # its last heartbeat: a worker killed mid-review hands its work over within this many seconds
    job_liveness_seconds: int = Field(default=30, ge=3, le=600)
    # how long a worker's Redis commands ride out an outage (retried with backoff) before the worker restarts its
    # connection; a review in flight keeps its result and publishes when Redis is back
    redis_outage_seconds: int = Field(default=300, ge=0, le=3600)
    # how long a job keeps retrying through a GitHub outage (5xx, rate limits) before it gives up; these retries
    # back off exponentially, honour Retry-After, and do not count against max_tries
    github_outage_seconds: int = Field(default=900, ge=0, le=86400)
    # how long a decided review waits for the DBOM ledger (database down, read-only) before it gives up; the
    # recording is retried with backoff, never the review, and no verdict is published without its record
    ledger_outage_seconds: int = Field(default=900, ge=0, le=86400)
    # on SIGTERM the worker takes no new job and lets running ones finish for this long before re-queueing them;
    # keep it below the orchestrator's grace period (k8s terminationGracePeriodSeconds 300, compose 60s)
    drain_seconds: int = Field(default=240, ge=0, le=3600)
    # the worker's Prometheus endpoint (the receiver serves /metrics on its own port); 0 turns it off
    # per-installation fairness: reviews of one installation running at once across all workers (app.worker.fairness)
    installation_concurrency: int = Field(default=2, ge=1, le=256)
    metrics_port: int = Field(default=9101, ge=0, le=65535)
    review_drafts: bool = False
    max_body_bytes: int = Field(default=25 * 1024 * 1024, ge=1024, le=100 * 1024 * 1024)
    delivery_ttl_days: int = Field(default=30, ge=30, le=365)
    clone_depth: int = Field(default=50, ge=1, le=10_000)
    clone_max_bytes: int = Field(default=500 * 1024 * 1024, ge=1024)
    clone_max_files: int = Field(default=50_000, ge=1)

    @field_validator(*URL_EXAMPLES, mode="after")
    @classmethod
    def _absolute_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        field = info.field_name or ""
        try:
            parts = urlsplit(value)
            absolute = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
        except ValueError:  # a port that is not a number or out of range, a broken IPv6 address
            absolute = False
        if not absolute or re.search(r"\s", value):
            raise ValueError(f"must be an absolute http(s) URL, e.g. {URL_EXAMPLES[field]}")
        return value.rstrip("/") if field in BASE_URLS else value

    @field_validator("redis_url", mode="after")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        if not value.startswith(("redis://", "rediss://")):
            raise ValueError("must be a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379/0")
        return value

    @field_validator("llm_model", "llm_base_url", mode="before")
    @classmethod
    def _llm_defaults(cls, value: Any, info: ValidationInfo) -> Any:
        # anthropic (and offline, which the worker's "Re-run with LLM" turns into anthropic) defaults to Anthropic's
        # API; an OpenAI-compatible server is usually a local one, so its URL and model are never guessed
        if value is not None and value != "":
            return value
        field = info.field_name or ""
        if info.data.get("llm_provider") == "openai":
            raise ValueError(f"required with LOGOMESH_LLM_PROVIDER=openai, e.g. {LLM_OPENAI_EXAMPLES[field]}")
        return LLM_ANTHROPIC_DEFAULTS[field]

    def llm_key(self) -> str | None:
        """The LLM provider's API key, or None when it is unset or empty (anthropic needs one; an OpenAI-compatible
        server may not)."""
        return (self.llm_api_key.get_secret_value() or None) if self.llm_api_key is not None else None

    def private_key_pem(self) -> str:
        """The App's private key, from ``LOGOMESH_PRIVATE_KEY`` or the file ``LOGOMESH_PRIVATE_KEY_PATH``."""
        if self.private_key is not None:
            text = self.private_key.get_secret_value().replace("\\n", "\n")
            variable = "LOGOMESH_PRIVATE_KEY"
        elif self.private_key_path is not None:
            variable = "LOGOMESH_PRIVATE_KEY_PATH"
            try:
                text = self.private_key_path.read_text(encoding="utf-8")
            except OSError as exc:
                raise SettingsError(variable, f"cannot read {self.private_key_path}: {exc.strerror}") from exc
        else:
            raise SettingsError("LOGOMESH_PRIVATE_KEY", "not set (nor LOGOMESH_PRIVATE_KEY_PATH)")
        if "-----BEGIN" not in text or "PRIVATE KEY-----" not in text:
            raise SettingsError(variable, "not a PEM private key")
        return text

    # sandbox
    sandbox: Literal["auto", "docker", "off"] = "auto"
    sandbox_image: str = "logomesh-sandbox:latest"
    # the OCI runtime of every sandbox container (sandbox/runtime.py, docs/deploy.md); the engine must know it
    sandbox_runtime: SandboxRuntime = "runc"
    # where a worker gets the sandbox image when its engine lacks it (a dind sidecar starts empty): a `docker save`
    # tarball to load, else the engine pulls the image; with a digest (sha256:…), any other image is refused
    sandbox_image_archive: Path | None = None
    sandbox_image_digest: str | None = Field(default=None, pattern=r"^sha256:[0-9a-f]{64}$")
    # with LOGOMESH_SANDBOX=docker, how long a starting worker waits for its Docker engine (a sidecar still starting)
    docker_wait_seconds: int = Field(default=120, ge=0, le=3600)
    # this worker process's identity on its sandbox objects (set by the worker at start; empty for the CLI)
    worker_id: str = Field(default="", max_length=100, pattern=r"^[A-Za-z0-9_.-]*$")
    sandbox_timeout_seconds: int = Field(default=600, ge=1, le=3600)
    # the opt-in setup phase of a repository (``test.setup``) runs with the network on: the operator may forbid it
    sandbox_allow_setup: bool = True
    sandbox_setup_timeout_seconds: int = Field(default=600, ge=1, le=3600)
    # the setup phase reaches only this index (and LOGOMESH_SANDBOX_INDEX_HOSTS, host[:port] each)
    sandbox_index_url: str = "https://pypi.org/simple"
    # comma-separated (pypi.internal,files.internal:8443) or a JSON list
    sandbox_index_hosts: Annotated[tuple[str, ...], NoDecode] = ()
    # the npm registry a Node project's packages come from (`npm ci` in the setup phase, through the same proxy)
    sandbox_npm_registry: str = "https://registry.npmjs.org/"
    # the CA bundle handed to the setup phase; unset: the one pip is configured with, else certifi's
    sandbox_ca_bundle: Path | None = None
    sandbox_env_cache_mb: int = Field(default=4096, ge=0)
    # host[:port]/path of a registry the workers share environments through (pushed after a verified build, the
    # digest kept in Redis, pulled by digest); unset: each engine builds its own (sandbox/env_registry.py)
    sandbox_env_registry: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)+$")
    # the most a repository's .logomesh.yml may raise its limits to
    # the most a repository's .logomesh.yml may raise the sandbox's memory to (the rubric's default is 1536 MB)
    sandbox_max_memory_mb: int = Field(default=4096, ge=64)
    sandbox_max_cpus: float = Field(default=2.0, gt=0)
    sandbox_max_pids: int = Field(default=1024, ge=16)

    # rationale (R)
    embedding: Literal["auto", "on", "off"] = "auto"
    embedding_model_path: Path | None = None

    # red agent
    red_team: Literal["auto", "on", "off"] = "auto"

    # judges
    llm_provider: Literal["offline", "anthropic", "openai"] = "offline"
    # unset: the provider's default (see _llm_defaults); openai (any OpenAI-compatible server) has none
    llm_base_url: str = Field(default="", validate_default=True)
    llm_model: str = Field(default="", min_length=1, validate_default=True)
    llm_api_key: SecretStr | None = None
    llm_timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    llm_max_retries: int = Field(default=3, ge=0, le=10)
    llm_max_tokens: int = Field(default=2048, ge=256, le=32000)
    # sent with temperature 0 where the provider accepts a seed (OpenAI-compatible servers); recorded per call
    llm_seed: int = Field(default=42, ge=0, le=2**31 - 1)
    # per review, across every judge and retry; the prices (USD per million tokens) turn tokens into cost
    llm_budget_tokens: int = Field(default=200_000, ge=1000)
    llm_budget_usd: float = Field(default=1.0, gt=0)
    llm_input_usd_per_mtok: float = Field(default=3.0, ge=0)
    llm_output_usd_per_mtok: float = Field(default=15.0, ge=0)
    llm_digest_chars: int = Field(default=25_000, ge=2000, le=400_000)
    # keys the prompt delimiters' nonces; unset: derived from the API key
    llm_nonce_key: SecretStr | None = None

    # DBOM ledger: defaults live under ``home`` (see _ledger_defaults)
    database_url: str = ""
    signing_key_path: Path | None = None
    signing_key: SecretStr | None = Field(default=None, description="PEM Ed25519 private key; wins over the path")
    public_url: str | None = Field(default=None, description="where the App serves /dbom/{id}")

    @field_validator("sandbox_index_hosts", mode="before")
    @classmethod
    def _host_list(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if value.lstrip().startswith("["):
            import json

            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError('must be host[:port] names separated by commas, or a JSON list of them') from exc
        return tuple(host.strip() for host in value.split(",") if host.strip())

    @model_validator(mode="after")
    def _ledger_defaults(self) -> Settings:
        # frozen model: set the home-relative defaults once, here, instead of in every caller
        if not self.database_url:
            object.__setattr__(self, "database_url", f"sqlite+aiosqlite:///{self.home / 'battles.db'}")
        if self.signing_key_path is None:
            object.__setattr__(self, "signing_key_path", self.home / "keys")
        if self.sandbox_ca_bundle is None:
            object.__setattr__(self, "sandbox_ca_bundle", host_ca_bundle())
        return self


PIP_CONFIGS = (Path("/etc/pip.conf"), Path("/etc/xdg/pip/pip.conf"), Path.home() / ".config/pip/pip.conf",
               Path.home() / ".pip/pip.conf")


def host_ca_bundle() -> Path | None:
    """The CA bundle this machine's pip trusts (``PIP_CERT``, then ``cert`` in pip's config files), else the
    TLS library's default file, else certifi's: what a container behind the same proxy needs to reach the index."""
    import configparser
    import os
    import ssl

    candidates: list[str] = [os.environ.get("PIP_CERT", "")]
    for path in PIP_CONFIGS:
        parser = configparser.ConfigParser()
        try:
            parser.read(path)
        except configparser.Error:
            continue
        candidates.append(parser.get("global", "cert", fallback=""))
    candidates += [os.environ.get("SSL_CERT_FILE", ""), ssl.get_default_verify_paths().cafile or ""]
    try:
        import certifi

        candidates.append(certifi.where())
    except ImportError:
        pass
    return next((Path(c) for c in candidates if c and Path(c).is_file()), None)


# pydantic's wording → ours; the value the user gave is quoted back only for these types, never for a string
# (it may be a key, a token or a URL with a password in it)
_SHOWN_INPUT = {"literal_error", "bool_parsing", "bool_type", "int_parsing", "int_from_float", "float_parsing",
                "greater_than", "greater_than_equal", "less_than", "less_than_equal"}
_SOURCE_FIELD = re.compile(r'field "([^"]+)"')


def _message(error: ErrorDetails) -> str:
    message = error["msg"].removeprefix("Value error, ")
    message = re.sub(r"^Input should be", "must be", message)
    if error["type"] == "literal_error":
        message = f"must be {error.get('ctx', {}).get('expected', '')}"
    elif error["type"] in ("int_parsing", "int_from_float"):
        message = "must be a whole number"
    elif error["type"] == "float_parsing":
        message = "must be a number"
    elif error["type"] in ("bool_parsing", "bool_type"):
        message = "must be true or false (or 1/0, yes/no, on/off)"
    if error["type"] in _SHOWN_INPUT:
        message += f"; got {error.get('input')!r}"
    return message


def load_settings(**overrides: object) -> Settings:
    """The settings from the environment and ``.env`` (``overrides`` win); raises :class:`SettingsError` naming the
    first variable that is malformed."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        raise SettingsError(variable(field) if field else f"{ENV_PREFIX}*", _message(first)) from exc
    except SourceError as exc:  # a value pydantic-settings could not even decode (a JSON-typed field)
        found = _SOURCE_FIELD.search(str(exc))
        name = variable(found.group(1)) if found else f"{ENV_PREFIX}*"
        raise SettingsError(name, "cannot be parsed (a list is written as JSON, e.g. [\"a\", \"b\"])") from exc


def require_app_settings(settings: Settings, *, worker: bool) -> None:
    """Fail at start-up of ``serve``/``worker`` when a setting the App needs is missing or malformed."""
    if settings.webhook_secret is None and not worker:
        raise SettingsError("LOGOMESH_WEBHOOK_SECRET", "not set")
    if settings.webhook_secret is not None and not settings.webhook_secret.get_secret_value():
        raise SettingsError("LOGOMESH_WEBHOOK_SECRET", "must not be empty")
    if not settings.public_url:
        raise SettingsError("LOGOMESH_PUBLIC_URL", "not set (the URL where GitHub and people reach this service)")
    if worker:
        if settings.app_id is None:
            raise SettingsError("LOGOMESH_APP_ID", "not set")
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        pem = settings.private_key_pem()
        try:
            load_pem_private_key(pem.encode(), password=None)
        except (ValueError, TypeError) as exc:
            variable = "LOGOMESH_PRIVATE_KEY" if settings.private_key else "LOGOMESH_PRIVATE_KEY_PATH"
            raise SettingsError(variable, "the PEM key cannot be loaded") from exc
