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


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LOGOMESH_", env_file=".env", extra="ignore", frozen=True)

    # where local state lives (ledger, keys) for the embedded default
    home: Path = Field(default=Path(".logomesh"))
    rubric_path: Path | None = None

    # sandbox
    sandbox: Literal["auto", "docker", "off"] = "auto"
    sandbox_image: str = "logomesh-sandbox:latest"
    sandbox_timeout_seconds: int = Field(default=300, ge=1, le=3600)

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
        return self


def load_settings(**overrides: object) -> Settings:
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "LOGOMESH_" + "_".join(str(p) for p in first["loc"]).upper()
        raise SettingsError(name, first["msg"]) from exc
