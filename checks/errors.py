"""Errors of the court.

Exception tree::

    CourtError
    ├── ConfigError        a .logomesh.yml is invalid; ``field`` names the bad key
    ├── DetectiveError     a detective could not finish; ``detective`` names it
    └── JudgeError         a judge could not give its opinions; ``judge`` names it
"""

from __future__ import annotations


class CourtError(Exception):
    """Base of every error the court raises on purpose."""


class ConfigError(CourtError):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f".logomesh.yml: invalid field '{field}': {message}")


class DetectiveError(CourtError):
    def __init__(self, detective: str, message: str) -> None:
        self.detective = detective
        self.message = message
        super().__init__(f"detective {detective} failed: {message}")


class JudgeError(CourtError):
    def __init__(self, judge: str, message: str) -> None:
        self.judge = judge
        self.message = message
        super().__init__(f"judge {judge} failed: {message}")
