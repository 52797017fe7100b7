"""RedTeam — an attacker embedded in the reviewer, working only on the changed code.

What: hands the case to a :class:`~checks.protocols.RedTeam` implementation (the MCTS Red Agent) and turns its
findings into evidence with severity, CWE and, when confirmed in the sandbox, the payload and its effect.
Why: the worst finding sets the red penalty (critical ×0.60, high ×0.75, medium ×0.85, once per level).
Example: ``critical CWE-78: run_cmd(cmd) reaches subprocess.run(shell=True); payload '; touch /tmp/x' confirmed``.
"""

from __future__ import annotations

from checks.detectives.registry import register
from checks.models import Case, DetectiveReport, Evidence, RedAnalysis
from checks.protocols import CourtResources, Sandbox
from checks.protocols import RedTeam as RedTeamAgent
from rubric import Rubric

ID = "red"


class RedTeam:
    id = ID

    def __init__(self, agent: RedTeamAgent | None, sandbox: Sandbox | None,
                 unavailable_reason: str = "no red agent is configured") -> None:
        self.agent = agent
        self.sandbox = sandbox
        self.unavailable_reason = unavailable_reason

    async def investigate(self, case: Case, rubric: Rubric) -> DetectiveReport:
        if self.agent is None:
            analysis = RedAnalysis(ran=False, reason=self.unavailable_reason)
            return DetectiveReport(detective=ID, red=analysis, evidence=(
                Evidence(id=f"{ID}.not-run", detective=ID, kind="red-not-run",
                         summary=f"Red agent did not run: {analysis.reason}", facts={"reason": analysis.reason}),
            ))
        analysis = await self.agent.attack(case, rubric, self.sandbox)
        evidence = [
            Evidence(
                id=f"{ID}.finding:{finding.id}",
                detective=ID,
                kind="red-finding",
                summary=finding.title,
                location=finding.location,
                severity=finding.severity,
                confidence=finding.confidence,
                cwe=finding.cwe,
                facts={"confirmed": finding.confirmed, "payload": finding.payload, "effect": finding.effect,
                       "security": True, **({"reproducer": finding.reproducer} if finding.reproducer else {})},
            )
            for finding in analysis.findings
        ]
        skipped = (analysis.search or {}).get("too_large")
        if skipped:
            paths = ", ".join(skipped["paths"][:5]) + (" …" if skipped["count"] > 5 else "")
            evidence.append(Evidence(
                id=f"{ID}.too-large", detective=ID, kind="analysis-capped", severity="low",
                summary=f"The red agent did not analyse {skipped['count']} changed file(s) larger than "
                        f"{skipped['limit_chars']:,} characters: {paths}",
                facts=dict(skipped)))
        if analysis.search is not None:
            evidence.append(Evidence(
                id=f"{ID}.search", detective=ID, kind="red-search",
                summary=analysis.reason or "red agent search", facts=dict(analysis.search),
            ))
        return DetectiveReport(detective=ID, red=analysis, evidence=tuple(evidence))


@register(ID, order=60, emits=("red-finding", "red-search", "red-not-run", "analysis-capped"))
def build(resources: CourtResources) -> RedTeam:
    return RedTeam(resources.red_team, resources.sandbox, resources.red_team_missing)
