"""Check each claim of a report against the repository: its file list and the facts of its AST.

- a **path** exists when it is a path of the repository, or the tail of one (``graph.py`` for
  ``src/graph.py``); a path that exists nowhere is a **hallucination**;
- a **component** is verified when the code defines it (class or function) or uses it (an imported library
  class such as ``StateGraph``); otherwise it is **unverified** — the report may name a concept, not code;
- a **feature** is verified when the evidence kind that proves it is on the record; when the record holds the
  opposite fact (no graph, a linear graph, no schema, unsafe calls...) the claim is a **hallucination**;
  otherwise it stays unverified.

A **negated** claim (the report says something is *absent*) is checked the other way round: a feature the code
has, or a file or component the repository holds, makes it a hallucination; a confirmed absence verifies it.
"""

from __future__ import annotations

from collections.abc import Sequence

from checks.audit.ast_facts import ArchitectureFacts
from checks.audit.claims import FEATURES
from checks.audit.models import Claim, ClaimCheck
from checks.models import Evidence, Location

# feature evidence kind → kinds that contradict it
CONTRADICTIONS: dict[str, frozenset[str]] = {
    "graph-fan-out": frozenset({"graph-linear", "graph-missing"}),
    "graph-wiring": frozenset({"graph-missing"}),
    "structured-output": frozenset({"structured-output-missing"}),
    "typed-state": frozenset({"typed-state-missing"}),
    "state-reducer": frozenset({"typed-state-missing", "graph-missing"}),
    "judge-personas": frozenset({"judge-personas-missing"}),
    "synthesis-engine": frozenset({"synthesis-engine-missing"}),
    "tools-clean": frozenset({"constraint-violation"}),
}


def _find_path(path: str, paths: Sequence[str]) -> str | None:
    if path in paths:
        return path
    suffix = "/" + path.lstrip("./")
    return next((p for p in paths if p.endswith(suffix)), None)


def _feature_record(claim: Claim, evidence: Sequence[Evidence]) -> tuple[str, Evidence | None, Evidence | None]:
    """What a feature claim says, the evidence that the feature is there, and the evidence that it is not."""
    _pattern, kind, what = FEATURES[claim.value]
    proof = next((e for e in evidence if e.kind == kind), None)
    against = CONTRADICTIONS.get(kind, frozenset())
    return what, proof, next((e for e in evidence if e.kind in against and e.severity != "info"), None)


def check_absence(claim: Claim, paths: Sequence[str], facts: ArchitectureFacts,
                  evidence: Sequence[Evidence]) -> ClaimCheck:
    """A negated claim: the report says ``claim.value`` is not there."""
    if claim.kind == "path":
        found = _find_path(claim.value, paths)
        if found is None:
            return ClaimCheck(claim=claim, status="verified", detail=f"{claim.value} is indeed not in the repository")
        return ClaimCheck(claim=claim, status="hallucination", location=Location(path=found),
                          detail=f"the report says {claim.value} is absent, but {found} exists")
    if claim.kind == "component":
        where = next(iter(facts.defines(claim.value)), None) or facts.uses(claim.value)
        if where is None:
            return ClaimCheck(claim=claim, status="verified",
                              detail=f"{claim.value} is indeed neither defined nor used in the code")
        return ClaimCheck(claim=claim, status="hallucination", location=where,
                          detail=f"the report says there is no {claim.value}, but the code has it at {where}")
    what, proof, absence = _feature_record(claim, evidence)
    if absence is not None:
        return ClaimCheck(claim=claim, status="verified", location=absence.location,
                          detail=f"the report says it is not so that {what}, and indeed: {absence.summary}")
    if proof is not None:
        return ClaimCheck(claim=claim, status="hallucination", location=proof.location,
                          detail=f"the report says it is not so that {what}, but: {proof.summary}")
    return ClaimCheck(claim=claim, status="unverified",
                      detail=f"the record neither shows nor refutes that it is not so that {what}")


def check_claim(claim: Claim, paths: Sequence[str], facts: ArchitectureFacts,
                evidence: Sequence[Evidence]) -> ClaimCheck:
    if claim.negated:
        return check_absence(claim, paths, facts, evidence)
    if claim.kind == "path":
        found = _find_path(claim.value, paths)
        if found is None:
            return ClaimCheck(claim=claim, status="hallucination",
                              detail=f"the report names {claim.value}, which does not exist in the repository")
        return ClaimCheck(claim=claim, status="verified", detail=f"{found} exists", location=Location(path=found))
    if claim.kind == "component":
        defined = facts.defines(claim.value)
        if defined:
            return ClaimCheck(claim=claim, status="verified", detail=f"{claim.value} is defined at {defined[0]}",
                              location=defined[0])
        used = facts.uses(claim.value)
        if used is not None:
            return ClaimCheck(claim=claim, status="verified", detail=f"{claim.value} is used at {used}",
                              location=used)
        return ClaimCheck(claim=claim, status="unverified",
                          detail=f"{claim.value} is neither defined nor used in the code")
    what, proof, contradiction = _feature_record(claim, evidence)
    if contradiction is not None:
        return ClaimCheck(claim=claim, status="hallucination",
                          detail=f"the report says {what}, but: {contradiction.summary}",
                          location=contradiction.location)
    if proof is not None:
        return ClaimCheck(claim=claim, status="verified", detail=f"{what}: {proof.summary}",
                          location=proof.location)
    return ClaimCheck(claim=claim, status="unverified", detail=f"the record neither shows nor refutes that {what}")


def cross_reference(claims: Sequence[Claim], paths: Sequence[str], facts: ArchitectureFacts,
                    evidence: Sequence[Evidence]) -> list[ClaimCheck]:
    return [check_claim(c, paths, facts, evidence) for c in claims]
