"""SandboxLimits: what one sandboxed run may use, taken from the rubric's ``sandbox`` section.

The network is not a limit but a constant: the test phase always runs with ``network_mode=none``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rubric import Rubric

SANDBOX_UID = 10001


@dataclass(frozen=True)
class SandboxLimits:
    memory_mb: int = 128
    cpus: float = 0.5
    pids: int = 50
    work_mb: int = 64
    tmp_mb: int = 32
    nofile: int = 256
    fsize_mb: int = 32
    output_kb: int = 64
    timeout_seconds: float = 300.0
    # beyond this much output the run is killed: draining an endless stream would cost the host CPU
    output_kill_kb: int = 16 * 1024

    @classmethod
    def from_rubric(cls, rubric: Rubric, timeout_seconds: float | None = None) -> SandboxLimits:
        rules = rubric.sandbox
        timeout = float(rubric.testing.timeout_seconds)
        if timeout_seconds is not None:
            timeout = min(timeout, float(timeout_seconds))
        return cls(memory_mb=rules.memory_mb, cpus=rules.cpus, pids=rules.pids, work_mb=rules.work_mb,
                   tmp_mb=rules.tmp_mb, nofile=rules.nofile, fsize_mb=rules.fsize_mb, output_kb=rules.output_kb,
                   timeout_seconds=timeout)

    def with_timeout(self, seconds: float) -> SandboxLimits:
        return replace(self, timeout_seconds=min(self.timeout_seconds, max(0.1, float(seconds))))

    @property
    def output_bytes(self) -> int:
        return self.output_kb * 1024

    @property
    def output_kill_bytes(self) -> int:
        return max(self.output_kill_kb * 1024, self.output_bytes)
