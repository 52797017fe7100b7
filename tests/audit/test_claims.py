"""Claims out of report text, and their cross-reference against a file list and AST facts (pure)."""

from __future__ import annotations

from checks.audit.architecture import architecture_evidence, safety_evidence
from checks.audit.ast_facts import collect
from checks.audit.claims import extract_claims
from checks.audit.crossref import cross_reference
from checks.audit.document import DocumentIndex
from checks.audit.models import ReportDocument, ReportPage
from rubric import load_rubric
from tests.audit.fixtures import GRAPH, JUDGES, STATE


def doc(*pages: str) -> ReportDocument:
    return ReportDocument(name="r.pdf", sha256="0" * 64,
                          pages=tuple(ReportPage(number=i, text=t) for i, t in enumerate(pages, start=1)))


def test_extracts_paths_components_and_features_with_their_page() -> None:
    claims = extract_claims(doc("Intro only.", "The ChiefJustice lives in src/justice.py and runs in parallel. "
                                "Call build_graph() to start."))
    found = {(c.kind, c.value, c.page) for c in claims}
    assert ("path", "src/justice.py", 2) in found
    assert ("component", "ChiefJustice", 2) in found
    assert ("component", "build_graph", 2) in found
    assert ("feature", "parallel-graph", 2) in found
    assert all(c.page == 2 for c in claims)
    quote = next(c.quote for c in claims if c.value == "src/justice.py")
    assert quote.startswith("The ChiefJustice lives in")


def test_repeated_claims_count_once_at_first_mention() -> None:
    claims = extract_claims(doc("See src/a.py.", "Again src/a.py."))
    assert [(c.value, c.page) for c in claims] == [("src/a.py", 1)]


def test_true_claims_verify_and_false_ones_are_hallucinations() -> None:
    sources = {"src/graph.py": GRAPH, "src/state.py": STATE, "src/judges.py": JUDGES}
    facts = collect(sources)
    evidence = [*architecture_evidence(facts), *safety_evidence(sources, load_rubric())]
    report = doc("StateGraph in src/graph.py fans out (fan-out) to judges. State is in graph.py and "
                 "src/nowhere.py. A QuantumPlanner decides. The Chief Justice is deterministic.")
    checks = {c.claim.value: c for c in cross_reference(extract_claims(report), sorted(sources), facts, evidence)}
    assert checks["src/graph.py"].status == "verified"
    assert checks["graph.py"].status == "verified"  # a path's tail is enough
    assert checks["src/nowhere.py"].status == "hallucination"
    assert checks["StateGraph"].status == "verified"
    assert checks["QuantumPlanner"].status == "unverified"
    assert checks["parallel-graph"].status == "verified"
    # the fixture without src/justice.py has no synthesis engine: the claim is contradicted
    assert checks["chief-justice"].status == "hallucination"


def test_a_linear_graph_contradicts_a_parallel_claim() -> None:
    linear = ("from langgraph.graph import StateGraph\n"
              "g = StateGraph(dict)\ng.add_edge('a', 'b')\ng.add_edge('b', 'c')\n")
    facts = collect({"g.py": linear})
    evidence = architecture_evidence(facts)
    kinds = {e.kind for e in evidence}
    assert {"graph-linear", "untyped-state"} <= kinds
    checks = cross_reference(extract_claims(doc("Detectives run in parallel.")), ["g.py"], facts, evidence)
    assert [c.status for c in checks] == ["hallucination"]
    assert "linear" in checks[0].detail


def test_negations_claim_an_absence_only_within_their_own_clause() -> None:
    claims = extract_claims(doc(
        "The detectives do not run in parallel. We never shipped src/legacy.py. "
        "There is no os.system anywhere, and the judges run in parallel. "
        "Nothing is cached, but the StateGraph fans out (fan-out)."))
    found = {(c.kind, c.value, c.negated) for c in claims}
    assert ("feature", "parallel-graph", True) in found  # "do not run in parallel"
    assert ("feature", "parallel-graph", False) in found  # "and the judges run in parallel": its own clause
    assert ("path", "src/legacy.py", True) in found
    assert ("feature", "safe-tools", False) in found  # "no os.system" is the safety claim itself
    assert ("component", "StateGraph", False) in found  # "Nothing is cached" sits in the clause before "but"


def test_a_negated_claim_is_checked_the_other_way_round() -> None:
    sources = {"src/graph.py": GRAPH, "src/state.py": STATE, "src/judges.py": JUDGES}
    facts = collect(sources)
    evidence = [*architecture_evidence(facts), *safety_evidence(sources, load_rubric())]
    report = doc("The graph does not fan out. We removed src/legacy.py. "
                 "There is no src/graph.py any more. Nothing uses a QuantumPlanner. "
                 "There is no chief justice.")
    checks = {(c.claim.value, c.claim.negated): c
              for c in cross_reference(extract_claims(report), sorted(sources), facts, evidence)}
    assert checks[("parallel-graph", True)].status == "hallucination"  # the code fans out
    assert "but" in checks[("parallel-graph", True)].detail
    assert checks[("src/legacy.py", True)].status == "verified"  # absent, as the report says
    assert checks[("src/graph.py", True)].status == "hallucination"  # it exists
    assert checks[("QuantumPlanner", True)].status == "verified"
    assert checks[("chief-justice", True)].status == "verified"  # no synthesis engine in these sources


def test_document_index_chunks_pages_and_ranks_by_terms() -> None:
    long_page = " ".join(f"word{i}" for i in range(300)) + " reducer merges parallel writes"
    index = DocumentIndex(doc("The dialectic of three personas.", long_page), chunk_words=100, overlap_words=10)
    assert len(index.chunks) == 1 + 4
    assert {c.page for c in index.chunks} == {1, 2}
    best = index.query("how does the reducer merge writes", k=1)
    assert best and best[0].page == 2 and "reducer" in best[0].text
    assert index.query("nothing-matches-this") == []
    assert index.contains("DIALECTIC of")[0].page == 1


def test_a_passage_is_the_sentence_that_speaks_to_the_question() -> None:
    index = DocumentIndex(doc("Architecture. The graph fans out to three judges. Unrelated words here today.",
                              "Nothing about it."))
    assert index.passage("How does the graph fan out to judges?") == (1, "The graph fans out to three judges.")
    assert index.passage("zebra") is None
