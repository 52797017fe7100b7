"""SandboxLimits: what one sandboxed run may use, taken from the rubric's ``sandbox`` section.

The network is not a limit but a constant: the test phase always runs with ``network_mode=none``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rubric import Rubric

SANDBOX_UID = 10001


@dataclass(frozen=True)
class SandboxCeiling:
    """The most a repository's ``.logomesh.yml`` may ask for (operator settings ``LOGOMESH_SANDBOX_MAX_*``)."""

    memory_mb: int = 4096
    cpus: float = 2.0
    pids: int = 1024


@dataclass(frozen=True)
class SandboxLimits:
    # networkx's own suite under coverage peaks at 350 MB (5,837 tests), 625 MB twice over (11,566); three times
    # over (20,343) it is killed at 512 MB and peaks at 875 MB; generated 20,000-test suites take 180-220 MB
    # (bench/sandbox_memory.py)
    memory_mb: int = 1536
    cpus: float = 1.0
    pids: int = 256
    work_mb: int = 256
    tmp_mb: int = 32
    nofile: int = 256
    fsize_mb: int = 32
    output_kb: int = 64
    timeout_seconds: float = 600.0
    # beyond this much output the run is killed: draining an endless stream would cost the host CPU
    output_kill_kb: int = 16 * 1024

    @classmethod
    def from_rubric(cls, rubric: Rubric, timeout_seconds: float | None = None,
                    ceiling: SandboxCeiling | None = None) -> SandboxLimits:
        """The rubric's limits (after the repository's overrides), bounded by the operator's ceiling;
        ``timeout_seconds`` is the operator's ceiling on time."""
        rules = rubric.sandbox
        top = ceiling or SandboxCeiling()
        timeout = float(rubric.testing.timeout_seconds)
        if timeout_seconds is not None:
            timeout = min(timeout, float(timeout_seconds))
        return cls(memory_mb=min(rules.memory_mb, top.memory_mb), cpus=min(rules.cpus, top.cpus),
                   pids=min(rules.pids, top.pids), work_mb=rules.work_mb, tmp_mb=rules.tmp_mb,
                   nofile=rules.nofile, fsize_mb=rules.fsize_mb, output_kb=rules.output_kb, timeout_seconds=timeout)

    def with_timeout(self, seconds: float) -> SandboxLimits:
        return replace(self, timeout_seconds=min(self.timeout_seconds, max(0.1, float(seconds))))

    def extended(self, seconds: float) -> SandboxLimits:
        """The same limits with ``seconds`` more on the wall clock (a budget of its own, e.g. the mutants')."""
        return replace(self, timeout_seconds=self.timeout_seconds + max(0.0, float(seconds)))

    @property
    def output_bytes(self) -> int:
        return self.output_kb * 1024

    @property
    def output_kill_bytes(self) -> int:
        return max(self.output_kill_kb * 1024, self.output_bytes)
