"""The one place LogoMesh reads its environment: ``LOGOMESH_*`` variables and an optional ``.env`` file.

Build it once at start-up (``Settings()``) and pass it explicitly. A missing or malformed value fails right
there with a message naming the variable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError
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
    # the opt-in setup phase of a repository (``test.setup``) runs with the network on: the operator may forbid it
    sandbox_allow_setup: bool = True
    sandbox_setup_timeout_seconds: int = Field(default=600, ge=1, le=3600)

    # rationale (R)
    embedding: Literal["auto", "on", "off"] = "auto"
    embedding_model_path: Path | None = None

    # red agent
    red_team: Literal["auto", "on", "off"] = "auto"

    # judges
    llm_provider: Literal["offline", "anthropic"] = "offline"


def load_settings(**overrides: object) -> Settings:
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "LOGOMESH_" + "_".join(str(p) for p in first["loc"]).upper()
        raise SettingsError(name, first["msg"]) from exc
