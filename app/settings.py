"""The one place LogoMesh reads its environment: ``LOGOMESH_*`` variables and an optional ``.env`` file.

Build it once at start-up (``Settings()``) and pass it explicitly. A missing or malformed value fails right
there with a message naming the variable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


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


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LOGOMESH_", env_file=".env", extra="ignore", frozen=True)

    # where local state lives (ledger, keys) for the embedded default; see default_home
    home: Path = Field(default_factory=default_home)
    rubric_path: Path | None = None

    # --- the GitHub App (serve / worker); DBOM links use public_url below ---
    app_id: int | None = Field(default=None, ge=1)
    private_key: SecretStr | None = Field(default=None, description="the App's private key, PEM text")
    private_key_path: Path | None = None
    webhook_secret: SecretStr | None = None
    github_api_url: str = Field(default="https://api.github.com", pattern=r"^https?://[^\s]+$")
    github_web_url: str = Field(default="https://github.com", pattern=r"^https?://[^\s]+$")
    github_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    check_name: str = Field(default="LogoMesh", min_length=1, max_length=100)
    redis_url: str = Field(default="redis://127.0.0.1:6379/0", pattern=r"^rediss?://")
    redis_prefix: str = Field(default="logomesh:", min_length=1, max_length=64)
    queue_name: str = Field(default="logomesh:queue", min_length=1, max_length=128)
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    concurrency: int = Field(default=2, ge=1, le=64)
    job_timeout_seconds: int = Field(default=900, ge=10, le=7200)
    max_tries: int = Field(default=5, ge=1, le=20)
    # how long a job keeps retrying through a GitHub outage (5xx, rate limits) before it gives up; these retries
    # back off exponentially, honour Retry-After, and do not count against max_tries
    github_outage_seconds: int = Field(default=900, ge=0, le=86400)
    # on SIGTERM the worker takes no new job and lets running ones finish for this long before re-queueing them;
    # keep it below the orchestrator's grace period (k8s terminationGracePeriodSeconds 300, compose 60s)
    drain_seconds: int = Field(default=240, ge=0, le=3600)
    # the worker's Prometheus endpoint (the receiver serves /metrics on its own port); 0 turns it off
    # per-installation fairness: reviews of one installation running at once across all workers (app.fairness)
    installation_concurrency: int = Field(default=2, ge=1, le=256)
    metrics_port: int = Field(default=9101, ge=0, le=65535)
    review_drafts: bool = False
    max_body_bytes: int = Field(default=25 * 1024 * 1024, ge=1024, le=100 * 1024 * 1024)
    delivery_ttl_days: int = Field(default=30, ge=30, le=365)
    clone_depth: int = Field(default=50, ge=1, le=10_000)
    clone_max_bytes: int = Field(default=500 * 1024 * 1024, ge=1024)
    clone_max_files: int = Field(default=50_000, ge=1)

    @model_validator(mode="after")
    def _app_urls(self) -> Settings:
        # one spelling of each base URL, so that f"{base}/path" never doubles a slash
        for name in ("github_api_url", "github_web_url", "public_url"):
            value = getattr(self, name)
            if isinstance(value, str):
                if not value.startswith(("http://", "https://")):
                    raise ValueError(f"{name} must be an http(s) URL")
                object.__setattr__(self, name, value.rstrip("/"))
        return self

    def llm_key(self) -> str | None:
        """The Anthropic API key, or None when it is unset or empty."""
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
    sandbox_timeout_seconds: int = Field(default=300, ge=1, le=3600)
    # the opt-in setup phase of a repository (``test.setup``) runs with the network on: the operator may forbid it
    sandbox_allow_setup: bool = True
    sandbox_setup_timeout_seconds: int = Field(default=600, ge=1, le=3600)
    # the setup phase reaches only this index (and LOGOMESH_SANDBOX_INDEX_HOSTS, host[:port] each)
    sandbox_index_url: str = "https://pypi.org/simple"
    sandbox_index_hosts: tuple[str, ...] = ()
    # the CA bundle handed to the setup phase; unset: the one pip is configured with, else certifi's
    sandbox_ca_bundle: Path | None = None
    sandbox_env_cache_mb: int = Field(default=4096, ge=0)
    # the most a repository's .logomesh.yml may raise its limits to
    sandbox_max_memory_mb: int = Field(default=2048, ge=64)
    sandbox_max_cpus: float = Field(default=2.0, gt=0)
    sandbox_max_pids: int = Field(default=1024, ge=16)

    # rationale (R)
    embedding: Literal["auto", "on", "off"] = "auto"
    embedding_model_path: Path | None = None

    # red agent
    red_team: Literal["auto", "on", "off"] = "auto"

    # judges
    llm_provider: Literal["offline", "anthropic"] = "offline"
    llm_model: str = Field(default="claude-sonnet-4-6", min_length=1)
    llm_base_url: str = "https://api.anthropic.com"
    llm_api_key: SecretStr | None = None
    llm_timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    llm_max_retries: int = Field(default=3, ge=0, le=10)
    llm_max_tokens: int = Field(default=2048, ge=256, le=32000)
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


def load_settings(**overrides: object) -> Settings:
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "LOGOMESH_" + "_".join(str(p) for p in first["loc"]).upper()
        raise SettingsError(name, first["msg"]) from exc


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
