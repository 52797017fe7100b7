"""The Red Agent: an MCTS attacker that tries to break the changed code, confirming exploits in the sandbox.

Modules: :mod:`~checks.red.hypotheses` (state/action space), :mod:`~checks.red.taint` (the AST taint pass),
:mod:`~checks.red.payloads` and :mod:`~checks.red.probes` (probe generation and oracles),
:mod:`~checks.red.mcts` (the planner), :mod:`~checks.red.severity` (the severity model),
:mod:`~checks.red.agent` (the agent) and :mod:`~checks.red.sarif` (SARIF 2.1.0 export).
"""

from checks.red.agent import CandidateSource, MCTSRedTeam, case_seed, collect_hypotheses
from checks.red.hypotheses import Attack, Hypothesis, Target
from checks.red.mcts import MCTSPlanner, SearchResult

__all__ = ["Attack", "CandidateSource", "Hypothesis", "MCTSPlanner", "MCTSRedTeam", "SearchResult", "Target",
           "case_seed", "collect_hypotheses"]
