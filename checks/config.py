"""Per-repository configuration: ``.logomesh.yml``, always read from the PR's **base** branch.

Example::

    version: 1
    thresholds: {pass: 0.75, fail: 0.5}
    test:
      command: ["python", "-m", "pytest", "-q"]
      setup: "pip install -e .[test]"     # opt-in: runs with the network on, before the tests
      timeout_seconds: 120
      environment:                        # replaces what is detected from the project's files
        requirements: ["pytest", "freezegun"]
        install_project: true
        import_roots: ["src"]
    sandbox: {image: "logomesh-sandbox:latest"}
    ignore: ["docs/**", "*.lock"]
    rejection_first: false
    comment: on-change                     # always | on-change (default) | never
    review_comments: fail                  # line comments in a PR review: fail (default) | always | never
    review_request_changes: false          # the review asks for changes (REQUEST_CHANGES) on a fail, not COMMENT
    rubric:                                # deep-merged into the rubric; the result is validated and hashed
      constraints: {network: {prohibited: true}}
      assumptions: {concurrent: ["app/limits/**"]}   # paths whose code runs concurrently: races are probed there
"""

from __future__ import annotations

import hashlib
import shlex
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from checks.errors import ConfigError
from checks.line_comments import ReviewMode
from checks.models import EnvironmentOverride

MAX_CONFIG_BYTES = 64 * 1024


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Thresholds(_Strict):
    pass_: float | None = Field(default=None, alias="pass", ge=0, le=1)
    fail: float | None = Field(default=None, ge=0, le=1)

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if self.pass_ is not None and self.fail is not None and self.fail > self.pass_:
            raise ValueError(f"fail ({self.fail}) must not exceed pass ({self.pass_})")
        return self


def _argv(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        parts = shlex.split(value)
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        parts = list(value)
    else:
        raise ValueError("must be a string or a list of strings")
    if not parts:
        raise ValueError("must not be empty")
    return tuple(parts)


class TestConfig(_Strict):
    command: tuple[str, ...] | None = None
    setup: tuple[str, ...] | None = None
    timeout_seconds: int | None = Field(default=None, ge=1, le=3600)
    environment: EnvironmentOverride | None = None

    @field_validator("command", "setup", mode="before")
    @classmethod
    def _split(cls, value: Any) -> tuple[str, ...] | None:
        return _argv(value)


class SandboxConfig(_Strict):
    image: str | None = Field(default=None, max_length=256, pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")


CommentMode = Literal["always", "on-change", "never"]
"""When the App comments on a PR: ``always``; ``on-change`` — when the verdict is not ``pass`` or a comment of
LogoMesh's is already there (it is kept up to date, never left stale); ``never`` — the check run only."""


class RepoConfig(_Strict):
    version: Literal[1] = 1
    thresholds: Thresholds = Thresholds()
    test: TestConfig = TestConfig()
    sandbox: SandboxConfig = SandboxConfig()
    ignore: tuple[str, ...] = ()
    rejection_first: bool | None = None
    comment: CommentMode | None = Field(default=None, description="None: the App's LOGOMESH_COMMENT setting")
    review_comments: ReviewMode | None = Field(default=None,
                                               description="None: the App's LOGOMESH_REVIEW_COMMENTS setting")
    review_request_changes: bool | None = Field(default=None, description="None: the App's "
                                                "LOGOMESH_REVIEW_REQUEST_CHANGES setting")
    rubric: dict[str, Any] = Field(default_factory=dict)
    sha256: str | None = None

    def rubric_overrides(self) -> dict[str, Any]:
        """The rubric overrides this config implies: its ``rubric`` section plus its thresholds."""
        overrides: dict[str, Any] = dict(self.rubric)
        verdict: dict[str, Any] = {}
        if self.thresholds.pass_ is not None:
            verdict["pass"] = self.thresholds.pass_
        if self.thresholds.fail is not None:
            verdict["fail"] = self.thresholds.fail
        if verdict:
            overrides["verdict"] = {**overrides.get("verdict", {}), **verdict}
        return overrides


def parse_repo_config(text: str | None, source: str = ".logomesh.yml") -> RepoConfig:
    """Parse ``.logomesh.yml`` text (None: the file is absent). Raises ConfigError naming the file (``source``)
    and the bad field."""
    if text is None:
        return RepoConfig()
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError("<file>", f"larger than {MAX_CONFIG_BYTES} bytes", source)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError("<yaml>", f"not valid YAML{where}", source) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("<root>", "must be a mapping", source)
    try:
        config = RepoConfig.model_validate({k: v for k, v in data.items() if k != "sha256"})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "<root>"
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "literal_error" and first["loc"] == ("version",):
            message = f"this LogoMesh reads version 1 (got {first.get('input')!r})"
        raise ConfigError(field, message, source) from exc
    return config.model_copy(update={"sha256": hashlib.sha256(raw).hexdigest()})
