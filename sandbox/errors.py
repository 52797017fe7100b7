"""Errors of the sandbox.

Exception tree::

    SandboxError              the sandbox could not do what was asked; ``reason`` says why
    ├── SandboxUnavailable    no Docker engine answers, or the image is missing; ``image`` names it
    └── RepositoryTooLarge    the tree to copy in exceeds the work dir's cap; ``size`` and ``limit`` in bytes
"""

from __future__ import annotations


class SandboxError(RuntimeError):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class SandboxUnavailable(SandboxError):
    def __init__(self, reason: str, image: str | None = None) -> None:
        self.image = image
        super().__init__(reason)


class RepositoryTooLarge(SandboxError):
    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"the repository tree is {size} bytes, more than the work dir's {limit} bytes")
