"""The Red Agent as the App and the CLI run it: the MCTS agent of :mod:`checks.red` plus bandit as a seeder.

Bandit runs as a library on source strings (never on the file system) and its issues become candidate
hypotheses; the agent's own taint pass says which argument reaches each sink, and the sandbox confirms.
``# nosec`` comments are ignored: they are part of the untrusted change.

Exceptions::

    RedTeamUnavailable     LOGOMESH_RED_TEAM=on but a required part (bandit) cannot be loaded
"""

from __future__ import annotations

import io
import json
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from checks.models import Case, Evaluation, RedAnalysis
from checks.protocols import Sandbox
from checks.red import Hypothesis, MCTSRedTeam
from checks.red.agent import CandidateSource
from checks.red.sarif import to_sarif
from checks.red.taint import target_index
from rubric import Rubric

# bandit test id → the red agent's attack class. Informational tests (B404 "import subprocess", B603
# "subprocess without shell") and noisy ones (B311 any use of random) are left out on purpose: the taint
# pass covers randomness where it makes a secret.
BANDIT_KINDS: dict[str, str] = {
    "B102": "code-injection", "B307": "code-injection",
    "B301": "deserialization", "B302": "deserialization", "B506": "deserialization",
    "B602": "command-injection", "B604": "command-injection", "B605": "command-injection",
    "B608": "sql-injection",
    "B105": "hardcoded-secret", "B106": "hardcoded-secret", "B107": "hardcoded-secret",
    "B303": "weak-crypto", "B304": "weak-crypto", "B305": "weak-crypto", "B324": "weak-crypto",
}


class RedTeamUnavailable(RuntimeError):
    def __init__(self, part: str, cause: str) -> None:
        self.part = part
        super().__init__(f"the red agent needs {part}: {cause}")


@dataclass
class BanditSource:
    """Bandit's findings on one file's source, as hypotheses (origin ``bandit``)."""

    name: str = "bandit"
    _config: Any = field(default=None, init=False, repr=False)
    _manager: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        with warnings.catch_warnings():
            # stevedore, under bandit, warns about an argument bandit still passes when its plugins load
            warnings.simplefilter("ignore", DeprecationWarning)
            from bandit.core import config as bandit_config
            from bandit.core import manager as bandit_manager

        self._config = bandit_config.BanditConfig()
        self._manager = bandit_manager
        logging.getLogger("bandit").setLevel(logging.ERROR)

    def candidates(self, path: str, source: str) -> list[Hypothesis]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            manager = self._manager.BanditManager(self._config, "file", quiet=True, ignore_nosec=True)
        # _parse_file is bandit's per-file entry point; it takes a byte stream, so nothing touches the disk.
        manager._parse_file(path, io.BytesIO(source.encode("utf-8", "surrogatepass")), [path])
        found: list[Hypothesis] = []
        enclosing = target_index(path, source)
        for issue in manager.results:
            kind = BANDIT_KINDS.get(issue.test_id)
            if kind is None:
                continue
            line = int(issue.lineno)
            found.append(Hypothesis(
                kind=kind, path=path, line=line, sink=issue.test_id,
                detail=f"bandit {issue.test_id} ({issue.test}): {issue.text}",
                target=enclosing(line), origins=("bandit",), scanner_ids=(issue.test_id,),
            ))
        return found


def scanner_sources(required: bool) -> tuple[list[CandidateSource], str | None]:
    """The available scanners; with ``required`` a missing bandit is an error, else a notice."""
    try:
        return [BanditSource()], None
    except ImportError as exc:
        if required:
            raise RedTeamUnavailable("bandit", str(exc)) from exc
        return [], f"bandit is not installed ({exc}); the red agent seeds from its own taint pass only"


@dataclass
class ReportingRedTeam:
    """Runs the agent and reports its runtime on the progress channel (runtime is never scored)."""

    agent: MCTSRedTeam
    say: Callable[[str], None]

    async def attack(self, case: Case, rubric: Rubric, sandbox: Sandbox | None) -> RedAnalysis:
        analysis = await self.agent.attack(case, rubric, sandbox)
        self.say(f"red agent: {analysis.reason}; {analysis.vulnerability_count} finding(s), worst "
                 f"{analysis.max_severity}; {analysis.runtime_seconds} s")
        return analysis


def write_sarif(path: Path, evaluation: Evaluation) -> None:
    """Write the evaluation's red-team findings to ``path`` as a SARIF 2.1.0 log (raises OSError)."""
    try:
        version = metadata.version("logomesh")
    except metadata.PackageNotFoundError:
        version = "0.0.0"
    log = to_sarif(evaluation.red_analysis.findings, tool_version=version)
    Path(path).write_text(json.dumps(log, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
