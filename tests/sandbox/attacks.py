"""Attacks written as a PR's own tests, shared by the sandbox tests and the hardening run through the App.

Each asserts that its defence held, so a contained attack is a passing test.
"""

from __future__ import annotations

from checks.models import Evaluation


def assert_padding_is_bounded(evaluation: Evaluation, padded: int) -> None:
    """A change that adds ``padded`` trivial passing tests beside its failing one: they all ran, and what the review
    stores does not grow with them (any language)."""
    assert evaluation.tests is not None and evaluation.tests.passed >= padded, evaluation.tests
    assert len(evaluation.tests.tests) <= 200 and evaluation.tests.cases_omitted >= padded - 200
    assert len(evaluation.canonical_json()) < 200_000


def assert_hollow_test_does_not_pass(evaluation: Evaluation, new_test: str, product: str, *,
                                     calls_it: bool = True) -> None:
    """A change whose new test passes but checks nothing: every mutant of its product lines survived its run, or was
    not run because no test runs its line (a test that never calls the change: ``calls_it`` false, every mutant
    uncovered), each named on its line, and the verdict is held at ``neutral`` by the Rule of Untested Change (any
    language)."""
    said = " | ".join(evaluation.verdict_reasons)
    diff = evaluation.differential
    assert diff is not None and diff.new_passing == (new_test,), said
    judged = [m for m in diff.mutants if m.status != "not_run"]
    assert judged and all(m.path == product for m in judged), diff.mutants
    statuses = {m.status for m in judged}
    summaries = [e.summary for e in evaluation.evidence if e.kind == "surviving-mutant"]
    if calls_it:
        assert "survived" in statuses and statuses <= {"survived", "uncovered"}, diff.mutants
        assert any("no test detects this change" in s for s in summaries), summaries
    else:
        assert statuses == {"uncovered"} and all(m.tests_run == 0 for m in judged), diff.mutants
        assert all(s.endswith("no test runs this line") for s in summaries) and summaries, summaries
    assert evaluation.verdict == "neutral", said
    assert "Rule of Untested Change" in said, said

FORK_BOMB_TEST = '''
import os, signal, time


def test_fork_bomb_hits_the_pid_limit():
    children = []
    try:
        for _ in range(600):
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children.append(pid)
    except OSError:
        pass
    finally:
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        for pid in children:
            os.waitpid(pid, 0)
    assert 0 < len(children) < 256
'''


def assert_shell_sink_probed(evaluation: Evaluation, where: str, *, confirmed: bool) -> None:
    """A change whose function runs a shell with its input (``where``: the sink's ``path:line``), reviewed with the Red
    Agent on: the syntax tree names the sink, a probe ran on it, and either its payload got through (critical,
    the argument named, ``fail``) or, the input quoted, nothing did (high, unconfirmed, tests measured, not ``fail``)
    (any language the Red Agent probes)."""
    said = " | ".join(evaluation.verdict_reasons)
    violations = [e for e in evaluation.evidence if e.kind == "constraint-violation"]
    assert [(str(e.location), e.cwe, e.severity) for e in violations] == [(where, "CWE-78", "high")]
    assert evaluation.measured["architecture"] is True and evaluation.measured["testing"] is True, said
    findings = evaluation.red_analysis.findings
    assert [(f.severity, f.confirmed, str(f.location)) for f in findings] == \
        [("critical" if confirmed else "high", confirmed, where)], findings
    assert "did not probe" not in said
    if confirmed:
        assert findings[0].payload and "argument 'line'" in findings[0].payload, findings[0]
        assert evaluation.verdict == "fail", said
        assert "on security" in said  # the judges read the confirmed finding
    else:
        assert "not confirmed by" in (findings[0].effect or ""), findings[0]
        assert evaluation.verdict != "fail", said
        assert "on security" not in said
