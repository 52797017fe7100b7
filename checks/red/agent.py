"""The MCTS Red Agent: seeds attack hypotheses from static analysis, then searches for exploits that a
sandbox probe confirms.

:class:`MCTSRedTeam` implements :class:`checks.protocols.RedTeam`. It never runs code itself: every probe goes
through ``sandbox.run_probe`` (the locked-down container, network off). Without a sandbox it still runs the
static passes and reports their findings unconfirmed, and says so in ``reason``.

The seed of the search comes from the case (head sha, diff, rubric), so a review is reproducible: the same
change gives the same tree, the same probes and the same findings.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from checks.constraints import path_matches
from checks.detectives.doc_analyst import is_test_path
from checks.languages import go, javascript
from checks.models import SEVERITY_ORDER, Case, RedAnalysis, RedFinding
from checks.protocols import Sandbox
from checks.red import go_targets, js_targets
from checks.red.assumptions import assumed_concurrency, documented, stated_concurrency
from checks.red.hypotheses import RACE_KIND, Attack, Hypothesis, merge
from checks.red.mcts import MCTSPlanner, Rollout, SearchResult, State
from checks.red.payloads import describe, families
from checks.red.probes import (
    REWARD_UNREACHED,
    ProbeOutcome,
    build_import_probe,
    build_probe,
    judge_probe,
    marker_lines,
    probe_nonce,
    runtime,
    sightings_of,
)
from checks.red.severity import rate
from checks.red.sightings import SHELL_AND_CODE
from checks.red.taint import TaintPass
from rubric import Rubric

MAX_SOURCE_CHARS = 400_000
ARG_PRIOR_TAINTED = 1.0
ARG_PRIOR_OTHER = 0.2
MAX_TREE_ROWS = 200
MAX_TRACE_ROWS = 200
MAX_IMPORTED = 20  # changed modules the import probe imports
# what a call seen at import means
RUNTIME_KINDS = {"exec": "code-injection", **{e: "command-injection" for e in SHELL_AND_CODE if e != "exec"}}


class CandidateSource(Protocol):
    """A static scanner that proposes hypotheses for one file's source (e.g. bandit, run by the caller)."""

    name: str

    def candidates(self, path: str, source: str) -> list[Hypothesis]: ...


def case_seed(case: Case, rubric: Rubric) -> int:
    digest = hashlib.sha256(f"{case.head_sha}|{case.diff_sha256}|{rubric.sha256}".encode()).hexdigest()
    return int(digest[:16], 16)


def collect_hypotheses(case: Case, rubric: Rubric, sources: Sequence[CandidateSource] = ()) -> list[Hypothesis]:
    """Every hypothesis on the lines the change adds to its (non-test) Python, JavaScript, TypeScript and Go files."""
    network = rubric.constraints.network.modules if rubric.constraints.network.prohibited else ()
    stated = stated_concurrency(case.intent_text) is not None
    found: list[Hypothesis] = []
    for changed in case.files:
        if (changed.status == "removed" or changed.is_binary or changed.is_symlink or changed.content is None
                or len(changed.content) > MAX_SOURCE_CHARS):
            continue
        added = None if changed.status == "added" else set(changed.added_lines)
        if go.owns(changed.path):
            if go.is_product_path(changed.path):
                found += go_targets.hypotheses(changed.path, changed.content, added)
            continue
        if javascript.owns(changed.path):  # its product code: neither a test nor a runner's configuration
            if not javascript.is_test_path(changed.path) and not javascript.is_harness_path(changed.path):
                found += js_targets.hypotheses(changed.path, changed.content, added)
            continue
        if not changed.path.endswith(".py") or is_test_path(changed.path):
            continue
        # the code runs concurrently where the PR, the rubric's assumptions or the module's docstrings say so
        concurrent = stated or any(path_matches(changed.path, g) for g in rubric.assumptions.concurrent) \
            or bool(documented(changed.content))
        found += TaintPass(changed.path, changed.content, added, network, concurrent).run()
        for source in sources:
            found += [h for h in source.candidates(changed.path, changed.content) if added is None or h.line in added]
    return merge(found)


def assumptions(case: Case, rubric: Rubric, hypotheses: Sequence[Hypothesis], stated: str | None
                ) -> dict[str, str]:
    """Who says the code of each race hypothesis runs concurrently (the PR's words ``stated``, the rubric's
    ``assumptions.concurrent``, or a docstring of the changed module at head), by hypothesis key. Only the
    modules that hold a race hypothesis have their docstrings read."""
    races = [h for h in hypotheses if h.kind == RACE_KIND]
    sources = {f.path: f.content for f in case.files if f.content is not None}
    docs = {path: documented(sources[path]) for path in {h.path for h in races} if path in sources}
    found = {}
    for hyp in races:
        reason = assumed_concurrency(hyp.path, hyp.target.qualname if hyp.target else None, stated,
                                     rubric.assumptions.concurrent, docs.get(hyp.path, {}))
        if reason is not None:
            found[hyp.key] = reason
    return found


def too_large(case: Case) -> list[str]:
    """Changed product Python files the static pass skips: larger than :data:`MAX_SOURCE_CHARS`."""
    return sorted(f.path for f in case.files
                  if f.status != "removed" and f.content is not None and f.path.endswith(".py")
                  and not is_test_path(f.path) and len(f.content) > MAX_SOURCE_CHARS)


def importable_modules(case: Case) -> list[str]:
    """The changed product modules (not tests), which the import probe imports one by one."""
    return [f.path for f in case.files if f.status != "removed" and f.path.endswith(".py") and not f.is_symlink
            and not f.is_binary and not is_test_path(f.path)][:MAX_IMPORTED]


@dataclass
class ImportRecord:
    """What ran while the changed modules were imported, as the import probe and the attack probes saw it."""

    modules: list[dict[str, Any]] = field(default_factory=list)
    sightings: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)

    def add(self, sightings: Sequence[dict[str, Any]]) -> None:
        for seen in sightings:
            if seen["event"] in RUNTIME_KINDS:
                self.sightings.setdefault((seen["event"], seen["path"], seen["line"]), seen)


def runtime_findings(rubric: Rubric, hypotheses: list[Hypothesis], imports: ImportRecord
                     ) -> tuple[list[RedFinding], set[str]]:
    """Findings for code that ran at import: a static hypothesis on that line is confirmed; a call no static
    pass named becomes a finding of its own. Returns the findings and the hypothesis keys they settle."""
    findings: list[RedFinding] = []
    settled: set[str] = set()
    for (event, path, line), seen in sorted(imports.sightings.items()):
        what = f"{event}({seen['detail']})" if seen.get("detail") else event
        effect = f"ran when {path} was imported: {what} (seen by the sandbox's audit hook)"
        matching = [h for h in hypotheses if h.path == path and h.line == line and h.key not in settled
                    and h.kind in ("command-injection", "code-injection")]
        if matching:
            settled.add(matching[0].key)
            findings.append(rate(rubric, matching[0], confirmed=True, payload=None, effect=effect))
            continue
        hyp = Hypothesis(kind=RUNTIME_KINDS[event], path=path, line=line, sink=event,
                         detail=f"{event} runs when the module is imported", origins=("runtime",))
        findings.append(rate(rubric, hyp, confirmed=True, payload=None, effect=effect))
    return findings, settled


@dataclass
class ProbeRecord:
    attack: Attack
    outcome: ProbeOutcome


@dataclass
class RedSearchSpace:
    """root → hypothesis → argument → payload family; a leaf is one probe in the sandbox."""

    hypotheses: list[Hypothesis]
    sandbox: Sandbox
    seed: int
    probe_timeout_seconds: float
    # the race hypotheses whose code the PR, the rubric or the code's docs say runs concurrently, with who says so:
    # they come first, and each is probed whatever the budget
    assumed: dict[str, str] = field(default_factory=dict)
    records: dict[str, ProbeRecord] = field(default_factory=dict)
    confirmed: dict[str, ProbeRecord] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    imports: ImportRecord = field(default_factory=ImportRecord)

    def __post_init__(self) -> None:
        self.by_key = {h.key: h for h in self.hypotheses}

    def _hypothesis_prior(self, hyp: Hypothesis) -> float:
        weight = {"critical": 1.0, "high": 0.8, "medium": 0.6, "low": 0.4}
        if hyp.key in self.assumed:
            return weight["high"]  # a confirmed race is high; the stated assumption also makes its probe required
        top = {"command-injection": "critical", "code-injection": "critical", "deserialization": "critical",
               "sql-injection": "high", "path-traversal": "high"}.get(hyp.kind, "medium")
        return weight[top] * (1.0 if hyp.tainted else 0.5)

    def _arguments(self, hyp: Hypothesis) -> list[tuple[str, float]]:
        if hyp.kind == RACE_KIND:  # the race probe fills every argument itself
            return [("arg=*", 1.0)]
        params = hyp.target.params if hyp.target else ()
        return [(f"arg={p}", ARG_PRIOR_TAINTED if p in hyp.tainted else ARG_PRIOR_OTHER) for p in params]

    def actions(self, state: State) -> Sequence[tuple[str, float]]:
        if not state:
            return [(h.key, self._hypothesis_prior(h)) for h in self.hypotheses]
        hyp = self.by_key[state[0]]
        if len(state) == 1:
            return self._arguments(hyp)
        return [(f"family={f.name}", f.prior) for f in families(hyp.kind, hyp.sink)]

    def is_terminal(self, state: State) -> bool:
        return len(state) == 3

    def is_closed(self, state: State) -> bool:
        return bool(state) and state[0] in self.confirmed

    def _attack(self, state: State) -> Attack:
        return Attack(self.by_key[state[0]], state[1].removeprefix("arg="), state[2].removeprefix("family="))

    def _completions(self, state: State) -> list[tuple[State, float]]:
        args = [state[1]] if len(state) > 1 else [a for a, _ in self.actions(state[:1])]
        arg_prior = dict(self.actions(state[:1]))
        fams = [state[2]] if len(state) > 2 else [f for f, _ in self.actions((*state[:1], args[0]))]
        fam_prior = dict(self.actions((*state[:1], args[0])))
        return [((state[0], a, f), arg_prior.get(a, 1.0) * fam_prior.get(f, 1.0)) for a in args for f in fams]

    async def rollout(self, state: State, rng: random.Random, time_left: float) -> Rollout:
        completions = self._completions(state)
        untested = [(s, w) for s, w in completions if self._attack(s).key not in self.records]
        if not untested:
            best = max((self.records[self._attack(s).key].outcome.reward for s, _ in completions),
                       default=REWARD_UNREACHED)
            return Rollout(reward=best, evaluated=False)
        chosen = rng.choices([s for s, _ in untested], weights=[w for _, w in untested], k=1)[0]
        outcome = await self.run_attack(self._attack(chosen), max(0.5, min(self.probe_timeout_seconds, time_left)))
        return Rollout(reward=outcome.reward, evaluated=True)

    async def run_attack(self, attack: Attack, timeout: float) -> ProbeOutcome:
        outcome = await self._probe(attack, timeout)
        record = ProbeRecord(attack=attack, outcome=outcome)
        self.records[attack.key] = record
        if outcome.confirmed:
            self.confirmed.setdefault(attack.hypothesis.key, record)
        self.imports.add(outcome.import_sightings)
        return outcome

    async def run_required(self) -> list[str]:
        """Where the PR, the rubric or the code's docs say the code runs concurrently, every race hypothesis is
        probed, budget or not: one probe (the first schedule) for each the search left untried. Returns the
        attacks it ran."""
        ran: list[str] = []
        for hyp in self.hypotheses:
            if hyp.key not in self.assumed or any(r.attack.hypothesis.key == hyp.key for r in self.records.values()):
                continue
            attack = Attack(hyp, "*", families(hyp.kind)[0].name)
            await self.run_attack(attack, self.probe_timeout_seconds)
            ran.append(attack.key)
        return ran

    async def _probe(self, attack: Attack, timeout: float) -> ProbeOutcome:
        nonce = probe_nonce(self.seed, attack)
        try:
            target = attack.hypothesis.target
            result = await self.sandbox.run_probe(build_probe(attack, nonce, self.seed, timeout), timeout,
                                                  runtime=runtime(attack),
                                                  beside=target.path if runtime(attack) == "go" and target else None)
        except Exception as exc:  # a sandbox failure is recorded with its cause and costs this probe only
            message = f"sandbox error: {type(exc).__name__}: {exc}"
            self.errors.append(message)
            return ProbeOutcome(False, REWARD_UNREACHED, message)
        return judge_probe(attack, nonce, result)


@dataclass
class MCTSRedTeam:
    """The Red Agent. ``sources`` add scanner candidates (bandit) to the agent's own taint pass."""

    sources: Sequence[CandidateSource] = ()
    clock: Callable[[], float] = time.monotonic
    last_search: SearchResult | None = field(default=None, init=False)

    async def attack(self, case: Case, rubric: Rubric, sandbox: Sandbox | None) -> RedAnalysis:
        started = self.clock()
        assumed = stated_concurrency(case.intent_text)
        hypotheses = collect_hypotheses(case, rubric, self.sources)
        probed = [h for h in hypotheses if h.probed]
        seed = case_seed(case, rubric)
        space: RedSearchSpace | None = None
        # The seed is logged as hex: canonical JSON (RFC 8785) only carries integers up to 2**53 exactly.
        search_log: dict[str, Any] = {"seed": f"{seed:016x}", "hypotheses": len(hypotheses),
                                      "probeable": len(probed)}
        if assumed is not None:
            search_log["assumed_concurrency"] = assumed
        reasons = assumptions(case, rubric, hypotheses, assumed)
        if assumed is None and reasons:  # stated by the rubric or the code's docs, not the PR
            search_log["assumed_by"] = dict(sorted(reasons.items())[:50])
        if skipped := too_large(case):
            search_log["too_large"] = {"paths": skipped[:50], "count": len(skipped), "limit_chars": MAX_SOURCE_CHARS}
        imports = ImportRecord()
        modules = importable_modules(case)
        if sandbox is not None and modules:
            imports = await self._import_probe(sandbox, modules, seed, rubric.red.probe_timeout_seconds)
            search_log["imports"] = imports.modules
        if sandbox is None:
            reason = (f"no sandbox: static analysis only, {len(probed)} exploitable hypotheses could not be "
                      "confirmed")
            search_log["ran"] = False
        elif not probed:
            reason = "nothing to probe: no hypothesis with a callable target in the change"
            search_log["ran"] = False
        else:
            red = rubric.red
            space = RedSearchSpace(probed, sandbox, seed, red.probe_timeout_seconds, assumed=reasons,
                                   imports=imports)
            planner = MCTSPlanner(space, seed=seed, max_steps=red.max_steps, max_time_seconds=red.max_time_seconds,
                                  branches=red.mcts_branches, exploration_weight=red.exploration_weight,
                                  clock=self.clock)
            result = await planner.run()
            self.last_search = result
            if required := await space.run_required():
                search_log["required"] = required
            search_log.update(ran=True, steps=result.steps, iterations=result.iterations,
                              stop_reason=result.stop_reason, tree=result.tree()[:MAX_TREE_ROWS],
                              trace=[{"step": s.number, "decisions": list(s.decisions), "reward": round(s.reward, 4),
                                      "probe": s.evaluated} for s in result.trace[:MAX_TRACE_ROWS]],
                              probes=[{"attack": r.attack.key, "confirmed": r.outcome.confirmed,
                                       "reward": r.outcome.reward, "effect": r.outcome.effect}
                                      for r in space.records.values()],
                              sandbox_errors=space.errors)
            reason = (f"MCTS ran {result.steps} probe(s) in {result.iterations} iteration(s) (stopped: "
                      f"{result.stop_reason}); confirmed {len(space.confirmed)} of {len(probed)} exploitable "
                      "hypotheses")
        findings, settled = runtime_findings(rubric, hypotheses, imports)
        findings += [self._finding(rubric, h, space, sandbox is not None, reasons.get(h.key)) for h in hypotheses
                     if h.key not in settled]
        findings.sort(key=lambda f: (-SEVERITY_ORDER[f.severity], f.id))
        worst = findings[0].severity if findings else "none"
        return RedAnalysis(
            attack_successful=any(f.confirmed for f in findings),
            vulnerability_count=len(findings),
            max_severity=worst,
            findings=tuple(findings),
            ran=True,
            reason=reason,
            search=search_log,
            runtime_seconds=round(self.clock() - started, 3),
        )

    @staticmethod
    async def _import_probe(sandbox: Sandbox, modules: list[str], seed: int, timeout: float) -> ImportRecord:
        """Import each changed module once in the sandbox: what runs at import runs in every user's process."""
        nonce = probe_nonce(seed, "imports")
        record = ImportRecord()
        try:
            result = await sandbox.run_probe(build_import_probe(modules, nonce), timeout)
        except Exception as exc:  # a sandbox failure costs this probe only
            record.modules.append({"error": f"sandbox error: {type(exc).__name__}: {exc}"})
            return record
        for data in marker_lines(result, nonce):
            if data.get("phase") != "import" or data.get("path") not in modules:
                continue
            seen = sightings_of(data)
            record.add(seen)
            record.modules.append({"path": data["path"], "ok": bool(data.get("ok")), "calls": len(seen),
                                   "error": str(data.get("error_type") or "")[:100] or None})
        return record

    @staticmethod
    def _finding(rubric: Rubric, hyp: Hypothesis, space: RedSearchSpace | None, sandboxed: bool,
                 assumed: str | None) -> RedFinding:
        if not hyp.probed:
            return rate(rubric, hyp, confirmed=False, payload=None,
                        effect="static finding: the construct itself is the evidence; no probe can confirm it")
        record = space.confirmed.get(hyp.key) if space else None
        if record is not None:
            described = describe(hyp.kind, record.attack.family, hyp.sink)
            payload = (f"{record.attack.family}: {described}" if hyp.kind == RACE_KIND
                       else f"argument '{record.attack.argument}' ← {record.attack.family}: {described}")
            return rate(rubric, hyp, confirmed=True, payload=payload, effect=record.outcome.effect,
                        reproducer=record.outcome.reproducer)
        stated = assumed is not None
        if not sandboxed:
            effect = "not confirmed: no sandbox was available to run probes"
        else:
            tried = [r for r in (space.records.values() if space else ()) if r.attack.hypothesis.key == hyp.key]
            effect = (f"not confirmed by {len(tried)} probes; last: {tried[-1].outcome.effect}" if tried
                      else "not confirmed: the search budget ran out before this hypothesis was probed")
        if stated:
            effect = f"{assumed}: a missing lock is evidence; {effect}"
        return rate(rubric, hyp, confirmed=False, payload=None, effect=effect, assumed=stated)
