"""Who says the changed code runs concurrently: the PR, the rubric's assumptions, or the code's own docstrings —
each makes a read-modify-write without a lock a hypothesis, its probe required and its missing lock evidence."""

from __future__ import annotations

import pytest

from checks.red.assumptions import assumed_concurrency, documented, stated_concurrency
from checks.red.hypotheses import RACE_KIND
from tests.red.conftest import Attack
from tests.red.test_race import IDEMPOTENT, LIMITER

DOCUMENTED = LIMITER.replace(
    "class RateLimiter:\n",
    'class RateLimiter:\n    """Thread-safe: one limiter is shared by all the request threads of a server."""\n\n')
DISCLAIMED = LIMITER.replace(
    "class RateLimiter:\n",
    'class RateLimiter:\n    """Not thread-safe: give each thread its own limiter."""\n\n')
PLAIN = "Adds a rate limiter with a sliding window."


def test_a_docstring_states_the_assumption_for_its_scope_and_a_disclaimer_states_none() -> None:
    assert documented(DOCUMENTED) == {"RateLimiter": "Thread-safe"}
    assert documented(DISCLAIMED) == {} and documented(LIMITER) == {} and documented("def (:") == {}
    assert stated_concurrency("This cache is not thread-safe; callers must lock.") is None
    assert stated_concurrency("It is never shared by threads.") is None
    module = documented('"""Counters shared by the worker processes."""\ndef bump():\n    pass\n')
    assert module == {"": "shared by the worker processes"}
    # a sentence that names concurrency with a negation states none
    for caveat in ("A cache.\n\nThread safety: none; callers lock.", "Callers must not share it between threads.",
                   "Unsafe when used by several threads."):
        assert documented(f'class Cache:\n    """{caveat}"""\n') == {}, caveat


@pytest.mark.parametrize(("stated", "globs", "qualname", "expected"), [
    ("thread-safe", ("other/**",), "RateLimiter.allow", "the change says the code runs concurrently ('thread-safe')"),
    (None, ("docs/**", "shop/**"), "RateLimiter.allow",
     "the rubric's assumptions.concurrent ('shop/**') says shop/limiter.py runs concurrently"),
    (None, (), "RateLimiter.allow", "the docstring of RateLimiter says it runs concurrently ('Thread-safe')"),
    (None, (), "bump", None),  # another scope of the module: its docstring says nothing of it
    (None, ("other/**",), "RateLimiter.allow",
     "the docstring of RateLimiter says it runs concurrently ('Thread-safe')"),
])
def test_who_says_a_callable_runs_concurrently(stated: str | None, globs: tuple[str, ...], qualname: str,
                                               expected: str | None) -> None:
    docs = documented(DOCUMENTED)
    assert assumed_concurrency("shop/limiter.py", qualname, stated, globs, docs) == expected


async def test_a_limiter_whose_docstring_says_it_is_shared_is_probed_and_confirmed(attack: Attack) -> None:
    """The PR says nothing, and the module uses no threads: the class's own docstring states the assumption."""
    analysis, _agent, sandbox = await attack({"shop/limiter.py": DOCUMENTED}, body=PLAIN)
    (race,) = [f for f in analysis.findings if f.id.startswith(RACE_KIND)]
    assert race.confirmed and race.severity == "high" and sandbox.probes
    assert race.effect is not None and "a limit exceeded" in race.effect
    disclaimed, _agent, box = await attack({"shop/limiter.py": DISCLAIMED}, body=PLAIN)
    assert [f for f in disclaimed.findings if f.id.startswith(RACE_KIND)] == [] and box.probes == []


async def test_the_rubric_s_assumption_names_the_paths_that_run_concurrently(attack: Attack) -> None:
    shared = {"assumptions": {"concurrent": ["shop/**"]}}
    analysis, _agent, _sandbox = await attack({"shop/limiter.py": LIMITER}, body=PLAIN, overrides=shared)
    (race,) = [f for f in analysis.findings if f.id.startswith(RACE_KIND)]
    assert race.confirmed and race.severity == "high"
    elsewhere = {"assumptions": {"concurrent": ["workers/**"]}}
    other, _agent, _sandbox = await attack({"shop/limiter.py": LIMITER}, body=PLAIN, overrides=elsewhere)
    assert [f for f in other.findings if f.id.startswith(RACE_KIND)] == []


async def test_an_unconfirmed_race_is_evidence_where_the_docs_say_the_code_is_shared(attack: Attack) -> None:
    documented_flag = IDEMPOTENT.replace("class Flag:\n", 'class Flag:\n    """Shared by the worker threads."""\n\n')
    analysis, _agent, _sandbox = await attack({"shop/flag.py": documented_flag}, body=PLAIN)
    (evidence,) = analysis.findings
    assert not evidence.confirmed and evidence.severity == "medium"
    assert evidence.effect is not None
    assert evidence.effect.startswith("the docstring of Flag says it runs concurrently ('Shared by the worker "
                                      "threads'): a missing lock is evidence"), evidence.effect
