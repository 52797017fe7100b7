"""Strict mypy over the tree as a background process: started once, read once by the quality gate."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ("app", "checks", "rubric", "sandbox", "tests", "bench")


def tool(name: str) -> str | None:
    """The virtualenv's own ``name`` beside this interpreter, else the one on PATH."""
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else shutil.which(name)


@dataclass
class TypeCheck:
    TEST = "test_the_code_type_checks_strictly"

    process: subprocess.Popen[bytes] | None
    output: IO[bytes]

    @classmethod
    def start(cls) -> TypeCheck:
        output = tempfile.TemporaryFile()  # noqa: SIM115 - kept open until the gate reads it (or the session ends)
        mypy = tool("mypy")
        if mypy is None:
            return cls(None, output)
        process = subprocess.Popen([mypy, "--no-incremental", *TARGETS], cwd=ROOT, stdout=output,
                                   stderr=subprocess.STDOUT, preexec_fn=lambda: os.nice(10))
        return cls(process, output)

    def result(self) -> tuple[int, str]:
        """mypy's exit status and output, waiting for it; (-1, reason) when mypy is not installed."""
        if self.process is None:
            return -1, "mypy is not installed; run scripts/setup.sh"
        returncode = self.process.wait()
        self.output.seek(0)
        return returncode, self.output.read().decode("utf-8", "replace")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.output.close()
