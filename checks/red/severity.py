"""The Red Agent's severity model: how a hypothesis becomes a rated :class:`~checks.models.RedFinding`.

The table lives in the rubric (``red.severity_table``); the defaults are:

=====================  =======  =========  ===========  ==========
kind                   CWE      confirmed  unconfirmed  confidence
=====================  =======  =========  ===========  ==========
command-injection      CWE-78   critical   high         0.6
code-injection         CWE-95   critical   high         0.6
deserialization        CWE-502  critical   high         0.6
sql-injection          CWE-89   high       medium       0.5
path-traversal         CWE-22   high       medium       0.5
resource-exhaustion    CWE-674  medium     low          0.4
hardcoded-secret       CWE-798  —          high         0.8
weak-randomness        CWE-330  —          medium       0.6
weak-crypto            CWE-327  —          low          0.5
network-use            CWE-918  —          medium       0.6
unlocked-shared-state  CWE-362  high       low          0.4
=====================  =======  =========  ===========  ==========

* **confirmed** — a sandbox probe's oracle fired: the table's ``confirmed`` severity at ``confirmed_confidence``.
* **unconfirmed, traced** — the taint pass traced untrusted input to the sink (or, for a static kind, the
  construct itself is the evidence): ``unconfirmed`` at ``confidence``. The schema forbids ``critical`` here:
  critical requires confirmation.
* **unconfirmed, assumed** — the PR or the repository says the code must hold up to what the kind breaks (for
  ``unlocked-shared-state``: it runs concurrently): the rule's ``assumed`` severity (medium for a missing lock).
* **unconfirmed, untraced** — only a pattern scanner (bandit) saw the sink: ``red.untraced`` (low, 0.3),
  never above the kind's ``unconfirmed``.
"""

from __future__ import annotations

from checks.models import SEVERITY_ORDER, Location, RedFinding
from checks.red.hypotheses import Hypothesis
from rubric import Rubric

TITLES = {
    "command-injection": "Command injection",
    "code-injection": "Code injection",
    "deserialization": "Unsafe deserialisation",
    "sql-injection": "SQL injection",
    "path-traversal": "Path traversal",
    "resource-exhaustion": "Unbounded recursion / resource exhaustion",
    "hardcoded-secret": "Hard-coded secret",
    "weak-randomness": "Weak randomness for a secret",
    "weak-crypto": "Weak cryptography",
    "network-use": "Network use where the rubric forbids it",
    "unlocked-shared-state": "Race on shared state without a lock",
}


def rate(rubric: Rubric, hyp: Hypothesis, *, confirmed: bool, payload: str | None, effect: str,
         assumed: bool = False, reproducer: str | None = None) -> RedFinding:
    """``assumed``: the PR or the repository states the assumption this kind breaks (the code runs concurrently),
    so an unconfirmed finding is rated ``assumed`` when the rule has one."""
    rule = rubric.red.severity_table.get(hyp.kind)
    if rule is None:
        raise KeyError(f"the rubric's red.severity_table has no entry for '{hyp.kind}'")
    if confirmed and rule.confirmed is not None:
        severity: str = rule.confirmed
        confidence = rubric.red.confirmed_confidence
    elif assumed and rule.assumed is not None:
        severity, confidence = rule.assumed, rule.confidence
    elif hyp.traced:
        severity, confidence = rule.unconfirmed, rule.confidence
    else:
        untraced = rubric.red.untraced
        severity = min(untraced.severity, rule.unconfirmed, key=lambda s: SEVERITY_ORDER[s])
        confidence = min(untraced.confidence, rule.confidence)
    verdict = "confirmed in the sandbox" if confirmed else "not confirmed"
    return RedFinding(
        id=hyp.key,
        title=f"{TITLES.get(hyp.kind, hyp.kind)} ({verdict}): {hyp.detail}",
        severity=severity,
        confirmed=confirmed and rule.confirmed is not None,
        confidence=confidence,
        cwe=rule.cwe,
        location=Location(path=hyp.path, line=hyp.line),
        payload=payload,
        effect=effect,
        reproducer=reproducer if confirmed else None,
    )
