"""Errors of the court.

Exception tree::

    CourtError
    ├── ConfigError        a .logomesh.yml is invalid; ``field`` names the bad key
    ├── DetectiveError     a detective could not finish; ``detective`` names it
    │   └── ModelUnavailable   the model a detective measures with could not be loaded: that part is not measured
    ├── JudgeError         a judge could not give its opinions; ``judge`` names it
    └── LLMError           a language model gave no usable answer; ``status_code`` when HTTP said why
        ├── LLMUnavailable     unreachable: connection, timeout, or retries exhausted on 429/5xx/overloaded
        └── LLMBudgetExceeded  the review's token or cost budget would be overspent; ``spent`` says by what
"""

from __future__ import annotations


class CourtError(Exception):
    """Base of every error the court raises on purpose."""


class ConfigError(CourtError):
    """``source`` names the file as the user knows it: ``.logomesh.yml`` of the base, or the ``--config`` path."""

    def __init__(self, field: str, message: str, source: str = ".logomesh.yml") -> None:
        self.field = field
        self.message = message
        self.source = source
        super().__init__(f"{source}: invalid field '{field}': {message}")


class DetectiveError(CourtError):
    def __init__(self, detective: str, message: str) -> None:
        self.detective = detective
        self.message = message
        super().__init__(f"detective {detective} failed: {message}")


class ModelUnavailable(DetectiveError):
    """The model a detective measures with could not be loaded (it was still loading when the review began): the
    detective reports its part "not measured" with ``message`` as the reason, as if the model had been missing."""


class JudgeError(CourtError):
    def __init__(self, judge: str, message: str) -> None:
        self.judge = judge
        self.message = message
        super().__init__(f"judge {judge} failed: {message}")


class LLMError(CourtError):
    def __init__(self, message: str, *, status_code: int | None = None, attempts: int = 1) -> None:
        self.message = message
        self.status_code = status_code
        self.attempts = attempts
        super().__init__(message)


class LLMUnavailable(LLMError):
    """The provider could not be reached or kept refusing: the review falls back to the offline judges."""


class LLMBudgetExceeded(LLMError):
    def __init__(self, message: str, *, spent: dict[str, float]) -> None:
        self.spent = spent
        super().__init__(message)
