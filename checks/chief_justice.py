"""The Chief Justice: plain, deterministic rules that turn opinions and facts into a ruling and the CIS.

Each rule is a named function of its own, applied in this order per criterion:

1. ``rule_of_evidence``      — a judge who contradicts the detectives' facts by more than the tolerance is
                               overruled: the opinion is pulled to the edge of the tolerated band.
2. ``rule_of_functionality`` — the weighted mean of the (possibly overruled) scores; the Tech Lead weighs most
                               on architecture (weights from the rubric).
3. ``rule_of_security``      — security evidence of high severity or worse caps a security criterion; a
                               *confirmed* flaw also caps the CIS.
4. ``dissent_for``           — a spread above the rubric's limit between judges forces a written dissent.

Before these rules, ``rehearing_order`` names every criterion whose judges spread by more than the rubric's
``dissent_spread``: the court hears those judges once more (:mod:`checks.rehearing`), each shown the others'
arguments and cited evidence, and the rules apply to the second round. A spread that survives it is a dissent.

Then L is the judges' mean ruling, bounded to ±bound around its ground-truth anchor, and the CIS follows
DESIGN.md exactly. ``rejection_first`` (rubric or repo config) turns any KILL into a failing verdict.

The verdict then follows the test facts (``rules_of_tests``), whatever the CIS:

- *Rule of Regression*    — a test that passed at base and fails with the change: ``fail``.
- *Rule of New Failures*  — a test the change adds or edits fails, or one skipped or expected to fail (xfail) at
                            base fails with the change: ``fail`` (a red test is a red check), measured base or not.
- *Rule of the Unmeasured Base* — the base could not run its tests and tests the change did not touch fail at head:
                            not ``pass`` (``neutral``, the base's failure named): nothing says whether they failed
                            before, so they are neither charged nor passed over. And with T not measured for that
                            reason, a CIS under the fail line with no failing test of the change, red finding or
                            intent penalty is ``neutral``, never ``fail``: no fact speaks against the change.
- *Rule of Reproduction*  — a regressed or new failing test that its re-runs do not reproduce is *flaky*: not
                            ``fail`` on its own, never ``pass`` (a test can tell a re-run from a first run).
- *Rule of the Environment* — a failing test whose error is the sandbox's environment (a missing program or
                            system library, the absent network, a missing third-party module): not ``pass``, the
                            cause named; never ``fail`` on its own.
- *Rule of the Declared Change* — a test the change deleted fails under the base's tests and uses a name that the
                            change's own changelog entry declares changed (and its product code touches): not
                            charged as a regression, not ``pass`` either (``neutral``: a person confirms the
                            behaviour change is intended); without such an entry it is a regression.
- *Rule of the Oracle*    — a test passes only under the change's harness (it fails under the base's test files
                            and configuration) or was reported passing although it raised: not ``pass``.
- *Rule of Completion*    — the change's own test run (or the run of its code under the base's tests) did not
                            complete: not ``pass``; the tests it never reached are *unreached*, never regressed;
                            and a CIS under the fail line with no failing test, red finding or intent penalty is
                            ``neutral``, never ``fail`` (T scored the incomplete run, nothing else spoke).
- *Rule of Start-up Code* — the head's environment holds a ``sitecustomize``/``usercustomize`` that the base's did
                            not: not ``pass``, the file and its distribution named (it runs at every interpreter
                            start). Executable ``.pth`` lines and auto-loaded plugins the change brings in are shown
                            as evidence (LogoMesh's interpreter never runs the one; the collector watches the other).
- *Rule of Untested Change* — mutants of the changed lines ran and none was detected: not ``pass``.
- *Rule of Measurement*   — nothing changed (``nothing to review``), or nothing the court can analyse
                            (``not analysed: <languages>``): ``neutral``, never a score that claims measurement,
                            and never ``fail`` on the CIS alone (it was computed on nothing; a test rule above may
                            still fail it); a changed Python file that could not be read (too large, binary): not
                            ``pass``, nor is one in a Python this interpreter does not read (Python 2, newer syntax).
                            A change whose only analysable files are dependency files LogoMesh measured
                            (``checks.dependencies.measured_files``) is judged on them. A mixed change is judged on
                            its Python code and the languages left unread are
                            named; the project's tests in a language LogoMesh does not run are named when no Python
                            test ran (T is then not measured, never "no tests"). Code in a language whose tests a
                            plug-in runs (Go, JavaScript, TypeScript) is judged on those tests when they ran at base
                            and head, and on the sinks its syntax tree shows; a serious sink there that no probe of
                            the Red Agent ran on (a JavaScript sink outside any export, a Go sink in a method) is
                            not ``pass``, and without R as well it cannot ``pass``; when its tests could not run,
                            the reason is named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from checks import cis
from checks.deciding import score_reason
from checks.dependencies import holds_back_pass, measured_files
from checks.hearing import by_criterion
from checks.judges.base import confirmed_security_flaw, docket, is_security
from checks.languages.python_dialect import unread_dialects
from checks.linguist import language, named_languages, runtime, unanalysed_code, unrun_tests
from checks.models import SEVERITY_ORDER, Brief, CriterionRuling, JudicialOpinion, RedAnalysis, TestDiff, round_score
from rubric import Criterion, Rubric


@dataclass(frozen=True)
class Judgment:
    rulings: tuple[CriterionRuling, ...]
    logic_judged: float | None
    logic_anchor: float
    logic_score: float
    cis_raw: float
    cis_score: float
    red_penalty: float
    intent_penalty: float
    verdict: str
    verdict_reasons: tuple[str, ...]
    dissent: tuple[str, ...]


def rule_of_evidence(
    opinions: Sequence[JudicialOpinion], fact_score: float | None, tolerance: int
) -> tuple[dict[str, float], list[str]]:
    """Clamp each judge's score into [fact − tolerance, fact + tolerance]; return scores and who was overruled."""
    scores: dict[str, float] = {}
    overruled: list[str] = []
    for op in opinions:
        score = float(op.score)
        if fact_score is not None:
            low, high = fact_score - tolerance, fact_score + tolerance
            if score < low or score > high:
                overruled.append(op.judge)
                score = min(max(score, low), high)
        scores[op.judge] = score
    return scores, overruled


def rule_of_functionality(rubric: Rubric, criterion: Criterion, scores: dict[str, float]) -> float:
    """Weighted mean of the judges' scores for one criterion, weights from the rubric."""
    weights = {judge: rubric.chief_justice.weight(criterion.id, judge) for judge in scores}
    total = sum(weights.values())
    if total == 0:
        return sum(scores.values()) / len(scores)
    return sum(scores[j] * weights[j] for j in scores) / total


def rule_of_security(rubric: Rubric, criterion: Criterion, brief: Brief, score: float) -> tuple[float, bool]:
    """Cap a security criterion when the record holds a high-or-worse security fact."""
    if not criterion.security:
        return score, False
    serious = [e for e in brief.evidence if is_security(e) and SEVERITY_ORDER[e.severity] >= SEVERITY_ORDER["high"]]
    if serious or confirmed_security_flaw(brief):
        cap = float(rubric.chief_justice.security_cap.criterion_max)
        return min(score, cap), score > cap
    return score, False


def extremes(rubric: Rubric, opinions: Sequence[JudicialOpinion]) -> tuple[JudicialOpinion, JudicialOpinion] | None:
    """The highest and the lowest opinion on one criterion when they spread by more than the rubric allows."""
    if len(opinions) < 2:
        return None
    high = max(opinions, key=lambda o: (o.score, o.judge))
    low = min(opinions, key=lambda o: (o.score, o.judge))
    if high.score - low.score <= rubric.chief_justice.dissent_spread:
        return None
    return high, low


def rehearing_order(rubric: Rubric, opinions: Sequence[JudicialOpinion]) -> dict[str, str]:
    """criterion id → why it is heard again: every criterion whose judges spread beyond ``dissent_spread``."""
    order: dict[str, str] = {}
    for criterion in rubric.criteria:
        spread = extremes(rubric, by_criterion(opinions).get(criterion.id, []))
        if spread is not None:
            high, low = spread
            order[criterion.id] = (f"{criterion.id}: {high.judge} {high.score}/5 and {low.judge} {low.score}/5 "
                                   f"spread by {high.score - low.score} > {rubric.chief_justice.dissent_spread:g}")
    return order


def dissent_for(rubric: Rubric, criterion: Criterion, opinions: Sequence[JudicialOpinion]) -> str | None:
    """A written dissent when the judges' scores on one criterion spread by more than the rubric allows."""
    spread = extremes(rubric, opinions)
    if spread is None:
        return None
    high, low = spread
    return (f"{criterion.title}: {high.judge} scored {high.score}/5 ({high.argument}) while {low.judge} scored "
            f"{low.score}/5 ({low.argument}).")


def rule_criterion(rubric: Rubric, brief: Brief, criterion: Criterion,
                   opinions: Sequence[JudicialOpinion]) -> CriterionRuling:
    return rule_on_facts(rubric, brief, criterion, opinions, docket(brief, criterion).fact_score)


def rule_on_facts(rubric: Rubric, brief: Brief, criterion: Criterion, opinions: Sequence[JudicialOpinion],
                  fact_score: float | None) -> CriterionRuling:
    """Apply the rules in order to one criterion whose facts score ``fact_score`` (1–5, None = unmeasured)."""
    applied: list[str] = []
    if not opinions:
        fallback = fact_score if fact_score is not None else 3.0
        return CriterionRuling(criterion_id=criterion.id, score=round_score(fallback), opinions_considered=0,
                               rules_applied=("no-opinions: facts only",))
    scores, overruled = rule_of_evidence(opinions, fact_score, rubric.chief_justice.evidence_tolerance)
    if overruled:
        applied.append("evidence")
    score = rule_of_functionality(rubric, criterion, scores)
    weights = {rubric.chief_justice.weight(criterion.id, j) for j in scores}
    if len(weights) > 1:
        applied.append("functionality")
    score, capped = rule_of_security(rubric, criterion, brief, score)
    if capped:
        applied.append("security")
    dissent = dissent_for(rubric, criterion, opinions)
    if dissent:
        applied.append("dissent")
    return CriterionRuling(
        criterion_id=criterion.id,
        score=round_score(score),
        opinions_considered=len(opinions),
        rules_applied=tuple(applied),
        overruled=tuple(sorted(overruled)),
        dissent=dissent,
    )


# The rules whose facts speak against the change (a failing test, a harness that decides outcomes, start-up code,
# a failure that did not reproduce): with one of them a CIS under the fail line stays a fail. The others say what
# was not measured or not analysed (the environment, a language LogoMesh does not read), which is no fact against it.
CHARGES = ("Rule of Regression", "Rule of New Failures", "Rule of the Oracle", "Rule of Start-up Code",
           "Rule of Reproduction", "Rule of Untested Change")


def probed(red: RedAnalysis, path: str, line: int | None) -> bool:
    """Whether a probe of the Red Agent reached the sink at ``path:line`` (its findings then say what it found): a
    probe whose module or target could not be reached (a module that does not import, a route never registered;
    reward 0) cleared nothing."""
    where = f":{path}:{line}:"
    return any(where in str(entry.get("attack", "")) and _reached(entry.get("reward"))
               for entry in (red.search or {}).get("probes") or () if isinstance(entry, dict))


def _reached(reward: object) -> bool:
    return isinstance(reward, (int, float)) and not isinstance(reward, bool) and reward > 0


def _not_pass(verdict: str, reasons: list[str], why: str, *, always_say: bool = False) -> str:
    """``pass`` becomes ``neutral``; ``why`` is recorded when it demoted the verdict, or always if asked."""
    if verdict == "pass" or always_say:
        reasons.append(why)
    return "neutral" if verdict == "pass" else verdict


def _rule_of_environment(diff: TestDiff, verdict: str, reasons: list[str]) -> str:
    if not diff.environmental:
        return verdict
    first = diff.environmental[0]
    return _not_pass(verdict, reasons, f"Rule of the Environment: {len(diff.environmental)} failing test(s) failed "
                     f"because of the sandbox, not this change (first: {first.name}: {first.cause})",
                     always_say=True)


def _incomplete_run(brief: Brief) -> str | None:
    """Which of the change's runs (its own, or its code under the base's tests) did not complete, and why."""
    if brief.tests is not None and brief.tests.status in ("timeout", "error"):
        return f"the change's test run did not complete ({brief.tests.reason})"
    guard = brief.differential.guard_tests if brief.differential is not None else None
    if guard is not None and guard.status in ("timeout", "error"):
        return f"the run of the change's code under the base's tests did not complete ({guard.reason})"
    return None


def _rule_of_completion(brief: Brief, verdict: str, reasons: list[str]) -> str:
    stopped = _incomplete_run(brief)
    return verdict if stopped is None else _not_pass(verdict, reasons, f"Rule of Completion: {stopped}")


def _rule_of_reproduction(diff: TestDiff, verdict: str, reasons: list[str]) -> str:
    if not diff.flaky:
        return verdict
    first = diff.flaky[0]
    return _not_pass(verdict, reasons, f"Rule of Reproduction: {len(diff.flaky)} failing test(s) did not fail again "
                     f"when re-run (first: {first.name}: {first.cause}): flaky, not charged to this change, and not "
                     "a pass", always_say=True)


def rules_of_tests(brief: Brief, verdict: str, reasons: list[str]) -> str:
    """The verdict after the test facts' rules (module docstring), each applied reason recorded."""
    files = brief.case.files
    if not files:
        reasons.append("Rule of Measurement: nothing to review (the change is empty)")
        return "neutral"
    diff = brief.differential
    if diff is not None and (held := [f for f in diff.startup_added if holds_back_pass(f)]):
        verdict = _not_pass(verdict, reasons, f"Rule of Start-up Code: the change brings {len(held)} "
                            f"piece(s) of start-up code into the test environment (first: {held[0]})",
                            always_say=True)
    if diff is not None and diff.status != "measured":
        if diff.new_failing:
            reasons.append(f"Rule of New Failures: {len(diff.new_failing)} test(s) of this change fail (first: "
                           f"{diff.new_failing[0].name}); the base could not be compared: {diff.reason}")
            return "fail"
        if diff.unattributed:
            verdict = _not_pass(verdict, reasons, f"Rule of the Unmeasured Base: {len(diff.unattributed)} test(s) "
                                f"fail at head (first: {diff.unattributed[0].name}) and {diff.reason}, so they can "
                                "be neither charged to this change nor passed over", always_say=True)
        verdict = _rule_of_environment(diff, verdict, reasons)
        verdict = _rule_of_reproduction(diff, verdict, reasons)
        verdict = _rule_of_completion(brief, verdict, reasons)  # an unmeasured base never silences it
    if diff is not None and diff.status == "measured":
        if diff.tampered:  # said even when a regression fails the change below: it says how it was hidden
            verdict = _not_pass(verdict, reasons, f"Rule of the Oracle: {len(diff.tampered)} test(s) pass only "
                                f"under this change's test harness (first: {diff.tampered[0].name})", always_say=True)
        if diff.regressed:
            reasons.append(f"Rule of Regression: {len(diff.regressed)} test(s) passed at base and fail with this "
                           f"change (first: {diff.regressed[0].name})")
            return "fail"
        if diff.new_failing:
            reasons.append(f"Rule of New Failures: {len(diff.new_failing)} test(s) of this change fail (first: "
                           f"{diff.new_failing[0].name})")
            return "fail"
        verdict = _rule_of_environment(diff, verdict, reasons)
        verdict = _rule_of_reproduction(diff, verdict, reasons)
        if diff.declared:
            said = diff.declared[0]
            verdict = _not_pass(verdict, reasons, f"Rule of the Declared Change: {len(diff.declared)} test(s) the "
                                "change deleted fail under the base's tests, and the change's changelog entry "
                                f"declares what they test changed (first: {said.name}: {said.cause}): not charged "
                                "as a regression, and not a pass until a person confirms the change is intended",
                                always_say=True)
        if diff.unattributed:
            verdict = _not_pass(verdict, reasons, f"Rule of the Unmeasured Base: {len(diff.unattributed)} test(s) "
                                f"fail at head (first: {diff.unattributed[0].name}) that the base's run did not "
                                "record, so they can be neither charged to this change nor passed over",
                                always_say=True)
        verdict = _rule_of_completion(brief, verdict, reasons)
        ran = [m for m in diff.mutants if m.status != "not_run"]
        if ran and not any(m.status in ("killed", "timeout") for m in ran):
            verdict = _not_pass(verdict, reasons, f"Rule of Untested Change: none of {len(ran)} small changes to "
                                "the changed lines is detected by any test")
    hidden = [(f.path, f.not_analysed) for f in files
              if f.path.endswith(".py") and f.status != "removed" and f.not_analysed]
    hidden += [(e.location.path, str(e.facts.get("reason"))) for e in unread_dialects(brief.evidence)
               if e.location is not None]
    if hidden:  # said whatever the verdict: a reader must know some of the code was never read
        verdict = _not_pass(verdict, reasons, f"Rule of Measurement: changed Python code was not analysed: "
                            f"{hidden[0][0]} ({hidden[0][1]})", always_say=True)
    tested = tested_languages(brief)
    # the languages whose tests LogoMesh tried to run and could not: named with why, never "does not run"
    blocked = {t.language: t.error for t in (brief.tests.toolchains if brief.tests is not None else ())
               if t.error and t.language not in tested}
    unrun = {name: n for name, n in unrun_tests(brief.case.head_paths).items()
             if name not in tested and name not in blocked}
    if unrun and brief.tests is not None and brief.components.get("testing") is None:
        reasons.append("Rule of Measurement: tests not measured: the runs found no Python test, and the project's "
                       f"tests are in {named_languages(unrun)}, which LogoMesh does not run")
    foreign = unanalysed_code(f.path for f in files if f.status != "removed")
    by_tests = {name: paths for name, paths in foreign.items() if name in tested}
    foreign = {name: paths for name, paths in foreign.items() if name not in tested}
    dependencies = set(measured_files(diff, brief.tests)) & {f.path for f in files}
    python_changed = any(f.path.endswith(".py") and f.status != "removed" for f in files)
    if dependencies and not python_changed and not by_tests:
        # what these files say was measured (resolved, installed hash-pinned, verified, the tests run in it): the
        # change is judged on that, as a Python change on its code
        reasons.append("Rule of Measurement: judged on the dependencies it changes (" + ", ".join(sorted(dependencies))
                       + "): resolved, installed, verified and tested under the base's tests")
    elif not python_changed and not by_tests:
        kinds = sorted({language(f.path) for f in files})
        reasons.append("Rule of Measurement: not analysed: " + ", ".join(kinds) + " (LogoMesh analyses Python code"
                       + "".join(f"; the {name} tests could not run: {why}" for name, why in sorted(blocked.items()))
                       + ")")
        if verdict == "fail":  # no test rule failed it: the CIS is all that did, and it measured nothing here
            reasons.append("Rule of Measurement: the CIS is computed on nothing LogoMesh analyses, so it cannot fail "
                           "this change")
        return "neutral"
    if by_tests:  # said whatever the verdict: what was measured of that code, and what was not
        parsed = brief.components.get("architecture") is not None
        reasons.append("Rule of Measurement: " + named_languages(by_tests) + " judged on its tests ("
                       + ", ".join(dict.fromkeys(f"{runtime(name)} {version}"
                                                 for name, version in sorted(tested.items()) if name in by_tests))
                       + (") and its syntax tree's sinks" if parsed else
                          "); its architecture rules and attack surface are not analysed"))
        unprobed = [e for e in brief.evidence if e.kind == "constraint-violation" and e.cwe and e.location
                    and SEVERITY_ORDER[e.severity] >= SEVERITY_ORDER["high"]
                    and language(e.location.path) in by_tests
                    and not probed(brief.red, e.location.path, e.location.line)]
        if unprobed:  # no probe reached it (outside any export, a module that does not load): neither confirmed
            first = unprobed[0]  # nor cleared
            verdict = _not_pass(verdict, reasons, f"Rule of Measurement: {len(unprobed)} serious sink(s) in "
                                f"{language(first.location.path) if first.location else 'code'} that the Red Agent "
                                f"did not probe (first: {first.location}: {first.cwe})", always_say=True)
        python = any(f.path.endswith(".py") and f.status != "removed" for f in files)
        if not python and brief.components.get("rationale") is None:
            # its tests alone: nothing else of the change was measured, and a verdict needs more than one fact
            verdict = _not_pass(verdict, reasons, "Rule of Measurement: the change's intent (R) was not measured "
                                "either, so its tests alone cannot pass it")
    if foreign:  # a mixed change: judged on what LogoMesh reads, and the reader is told what was not read
        judged = "Python code" if not by_tests else "Python code and tests" if any(
            f.path.endswith(".py") and f.status != "removed" for f in files) else "tests"
        reasons.append(f"Rule of Measurement: judged on its {judged} only; not analysed: "
                       + named_languages(foreign) + " (first: " + next(iter(foreign.values()))[0] + ")")
    return verdict


def tested_languages(brief: Brief) -> dict[str, str]:
    """``{"Go": "1.23"}``: the languages other than Python whose tests ran at head and were compared with the base
    (a measured differential), with the toolchain they ran with."""
    diff = brief.differential
    if brief.tests is None or diff is None or diff.status != "measured":
        return {}
    return {name: t.version for t in brief.tests.toolchains if t.error is None and t.version
            for name in (t.language, *t.covers)}


def rule_of_security_cap(rubric: Rubric, brief: Brief, value: float, *, flaw: str, whole: str
                         ) -> tuple[float, str | None]:
    """A confirmed security flaw caps the whole (a PR's CIS, an audit's score) at the rubric's ``cis_max``:
    the value, capped or not, and the reason when it was."""
    cap = rubric.chief_justice.security_cap.cis_max
    if confirmed_security_flaw(brief) and value > cap:
        return cap, f"Rule of Security: {flaw} caps {whole} at {cap:.2f}"
    return value, None


def rule_of_rejection(rubric: Rubric, opinions: Sequence[JudicialOpinion], verdict: str,
                      rejection_first: bool | None = None) -> tuple[str, str | None]:
    """Any KILL fails the case under the rejection-first policy (the rubric's, unless ``rejection_first`` says
    otherwise), and is recorded either way: the verdict and the reason, if there was a KILL."""
    kills = sorted({f"{op.judge} on {op.criterion_id}" for op in opinions if op.verdict == "KILL"})
    if not kills:
        return verdict, None
    if rubric.chief_justice.rejection_first if rejection_first is None else rejection_first:
        return "fail", "Rejection-first policy: KILL from " + ", ".join(kills)
    return verdict, "KILL recorded (rejection-first is off): " + ", ".join(kills)


def judge_case(
    rubric: Rubric,
    brief: Brief,
    opinions: Sequence[JudicialOpinion],
    *,
    rejection_first: bool | None = None,
) -> Judgment:
    """Rule on every criterion, compute L within its bound and the final CIS, and reach the verdict."""
    grouped = by_criterion(opinions)
    rulings = tuple(rule_criterion(rubric, brief, c, grouped.get(c.id, [])) for c in rubric.criteria)

    components = brief.components
    rationale = components.get("rationale")
    architecture = components.get("architecture")
    testing = components.get("testing")
    r = rationale if rationale is not None else rubric.rationale.not_measured
    a = architecture if architecture is not None else rubric.architecture.baseline
    t = testing if testing is not None else rubric.testing.not_measured

    anchor = cis.logic_anchor(rubric, {"rationale": rationale, "architecture": a, "testing": testing}, fallback=a)
    judged = None
    if any(r_.opinions_considered for r_ in rulings):
        judged = sum(cis.opinion_to_unit(r_.score) for r_ in rulings) / len(rulings)
    logic = cis.bounded_logic(rubric, anchor, judged if judged is not None else anchor)

    raw = cis.cis_raw(rubric, r, a, t, logic)
    red = cis.red_penalty(rubric, [f.severity for f in brief.red.findings])
    # R decides a penalty only when the rationale detective found the mismatch strong (checks/rationale.py)
    semantic = brief.semantic
    threshold = semantic.penalty_threshold if semantic is not None and semantic.measured else None
    intent = cis.intent_penalty(rubric, rationale, threshold) if threshold is not None else 1.0
    final = cis.cis_final(raw, red, intent)

    reasons: list[str] = []
    final, capped = rule_of_security_cap(rubric, brief, final, flaw="a confirmed security flaw", whole="the CIS")
    if capped:
        reasons.append(capped)
    verdict = cis.verdict_for(rubric, final)
    reasons.insert(0, score_reason(final, rubric.verdict.pass_, rubric.verdict.fail))
    if verdict == "pass" and rubric.verdict.require_measured_tests_for_pass and testing is None:
        verdict = "neutral"
        reasons.append("Tests were not measured, so the verdict cannot be pass")
    verdict = rules_of_tests(brief, verdict, reasons)
    stopped = _incomplete_run(brief)
    # only the CIS failed it: no failing test, finding, intent penalty or other fact against the change
    cis_only = (verdict == "fail" and red == 0.0 and intent == 1.0 and not capped
                and not any(r.startswith(CHARGES) for r in reasons))
    diff = brief.differential
    if cis_only and stopped is not None:
        # and only because T scored a run that did not complete
        verdict = "neutral"
        reasons.append(f"Rule of Completion: {stopped}, so a CIS under the fail line with no failing test, "
                       "finding or intent penalty is not a fail")
    elif (cis_only and testing is None and diff is not None and diff.status != "measured"
            and not diff.new_failing):
        # and T was not measured because the base's own tests could not run
        verdict = "neutral"
        reasons.append(f"Rule of the Unmeasured Base: the tests were not measured ({diff.reason}), so a CIS under "
                       "the fail line with no failing test, finding or intent penalty is not a fail")
    verdict, rejected = rule_of_rejection(rubric, opinions, verdict, rejection_first)
    if rejected:
        reasons.append(rejected)

    return Judgment(
        rulings=rulings,
        logic_judged=judged,
        logic_anchor=anchor,
        logic_score=logic,
        cis_raw=raw,
        cis_score=final,
        red_penalty=red,
        intent_penalty=intent,
        verdict=verdict,
        verdict_reasons=tuple(reasons),
        dissent=tuple(r_.dissent for r_ in rulings if r_.dissent),
    )
