"""Pull the checkable claims out of a report's text: the files, components and features it says exist.

- **path**: a path-like token with a known extension (the same pattern the PR DocAnalyst uses);
- **component**: a CamelCase identifier of at least two words (``ChiefJustice``, ``StateGraph``) or a
  ``snake_case()`` call;
- **feature**: a phrase from :data:`FEATURES`, each tied to the evidence kind that would prove it.

A claim is **negated** when a negation ("not", "no", "never", "without", "n't", "removed", …) stands in the same clause
shortly before it: "the judges do not run in parallel" claims the absence of a parallel graph, and is checked
as such. Every claim keeps its page and the sentence it came from. Text is untrusted: nothing here interprets
it beyond these patterns, and claims are de-duplicated (first occurrence wins) so repetition changes nothing.
"""

from __future__ import annotations

import re

from checks.audit.models import Claim, ReportDocument
from checks.detectives.doc_analyst import PATH_TOKEN

COMPONENT = re.compile(r"(?<![\w./-])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+)(?![\w/-])|(?<![\w.])([a-z_][a-z0-9_]{2,})\(\)")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")
MAX_QUOTE = 240
NEGATION = re.compile(r"\b(?:not|no|never|without|neither|nor|cannot|lacks?|none|nothing|removed|deleted|dropped|"
                      r"eliminated)\b|n't\b", re.I)
CLAUSE_BREAK = re.compile(r"[,;:()]|\b(?:but|while|whereas|although|though|yet|and|so|because)\b", re.I)
NEGATION_WORDS = 6  # how far back, in words, a negation still governs the claim

# feature id → (pattern in the report, evidence kind that proves it, what the report claims)
FEATURES: dict[str, tuple[re.Pattern[str], str, str]] = {
    "parallel-graph": (re.compile(r"\b(?:in parallel|parallel (?:nodes|branches|execution|judges|detectives)|"
                                  r"fan[- ](?:out|in))\b", re.I), "graph-fan-out",
                       "the graph runs branches in parallel (fan-out/fan-in)"),
    "graph": (re.compile(r"\b(?:StateGraph|LangGraph|orchestration graph|graph orchestration)\b", re.I),
              "graph-wiring", "the workflow is an explicit graph"),
    "structured-output": (re.compile(r"\b(?:structured output|with_structured_output|bind_tools|tool schemas?)\b",
                                     re.I), "structured-output", "model answers are bound to schemas"),
    "typed-state": (re.compile(r"\b(?:pydantic|TypedDict|typed state)\b", re.I), "typed-state",
                    "the state is a typed model"),
    "reducers": (re.compile(r"\breducers?\b|operator\.add", re.I), "state-reducer",
                 "state fields have reducers for parallel writes"),
    "personas": (re.compile(r"\b(?:prosecutor|defen[cs]e (?:attorney|counsel|judge)|tech lead)\b", re.I),
                 "judge-personas", "distinct judge personas"),
    "chief-justice": (re.compile(r"\b(?:chief justice|synthesis engine)\b", re.I), "synthesis-engine",
                      "a deterministic synthesis engine"),
    "safe-tools": (re.compile(r"\b(?:sandbox(?:ed|ing)?|no os\.system|shell injection|safe tool(?:ing|s)?)\b", re.I),
                   "tools-clean", "tools are sandboxed and free of unsafe calls"),
}


def sentences(text: str) -> list[str]:
    flat = " ".join(text.split())
    return [s.strip() for s in SENTENCE_END.split(flat) if s.strip()]


def _quote(sentence: str) -> str:
    return sentence if len(sentence) <= MAX_QUOTE else sentence[: MAX_QUOTE - 1] + "…"


def is_negated(sentence: str, start: int) -> bool:
    """Does a negation govern the claim that starts at ``start``? Only the words of its own clause just before
    it count: "no os.system" inside a feature's own phrase is not a negation of it."""
    clause = CLAUSE_BREAK.split(sentence[:start])[-1]
    return bool(NEGATION.search(" ".join(clause.split()[-NEGATION_WORDS:])))


def extract_claims(document: ReportDocument) -> list[Claim]:
    """Every distinct claim of the report, in order of first appearance."""
    seen: set[tuple[str, str, bool]] = set()
    claims: list[Claim] = []

    def add(kind: str, value: str, page: int, sentence: str, start: int) -> None:
        negated = is_negated(sentence, start)
        key = (kind, value, negated)
        if key not in seen:
            seen.add(key)
            claims.append(Claim(kind=kind, value=value, page=page, quote=_quote(sentence), negated=negated))

    for page in document.pages:
        for sentence in sentences(page.text):
            for match in PATH_TOKEN.finditer(sentence):
                add("path", match.group(0), page.number, sentence, match.start())
            for match in COMPONENT.finditer(sentence):
                add("component", match.group(1) or match.group(2), page.number, sentence, match.start())
            for feature, (pattern, _kind, _what) in FEATURES.items():
                found = pattern.search(sentence)
                if found is not None:
                    add("feature", feature, page.number, sentence, found.start())
    return claims
