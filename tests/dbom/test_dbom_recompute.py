"""``logomesh dbom verify --recompute``: R recomputed from the vectors a real review records (the real embedding
model, a real git repository, a real SQLite ledger), and a record whose vector was edited is caught, whether the
edit was re-signed or not."""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
from pathlib import Path

import pytest

from app.ledger import open_ledger
from app.review.embeddings import SentenceEmbedder
from app.review.gitrepo import GitRepo, read_case
from app.settings import load_settings
from checks.config import parse_repo_config
from checks.court import CourtParts, review
from checks.models import Evaluation, SemanticResult
from checks.rationale_vectors import R_TOLERANCE, encode_vector, recompute_mismatches, recompute_r
from rubric import load_rubric
from tests.core.scenarios import SCENARIOS, build
from tests.dbom.factory import entanglement
from tests.dbom.test_dbom_cli import invoke
from tests.rationale.conftest import embedder  # noqa: F401  (the real model, loaded once per session)

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory: pytest.TempPathFactory, embedder: SentenceEmbedder) -> Evaluation:  # noqa: F811
    path = build(tmp_path_factory.mktemp("repo"), "shell")
    spec = SCENARIOS["shell"]
    case = read_case(GitRepo.open(path), "main", "pr", config=parse_repo_config(None), title=spec["title"],
                     body=spec["body"])
    return asyncio.run(review(case, load_rubric(), CourtParts(embedder=embedder,
                                                               sandbox_missing="no sandbox in this test",
                                                               red_team_missing="no red agent in this test")))


def semantic(evaluation: Evaluation) -> SemanticResult:
    assert evaluation.semantic is not None and evaluation.semantic.measured
    return evaluation.semantic


def edited(evaluation: Evaluation) -> Evaluation:
    """The evaluation with v_intent replaced by its best chunk's vector: the cosine becomes 1, R becomes 1."""
    result = semantic(evaluation)
    assert result.vectors is not None
    vectors = result.vectors.model_copy(update={"intent": result.vectors.chunks[0]})
    return evaluation.model_copy(update={"semantic": result.model_copy(update={"vectors": vectors})})


def append(home: Path, evaluation: Evaluation) -> str:
    async def work() -> str:
        ledger = await open_ledger(load_settings(home=home))
        try:
            return (await ledger.append(evaluation, installation_id=None,
                                        entanglement=entanglement(evaluation))).id
        finally:
            await ledger.close()

    return asyncio.run(work())


def test_a_review_records_the_vectors_r_was_computed_from(evaluation: Evaluation) -> None:
    result = semantic(evaluation)
    vectors = result.vectors
    assert vectors is not None and result.model is not None
    rules = load_rubric().rationale
    assert vectors.dims == 384 and len(base64.b64decode(vectors.intent)) == 2 * 384
    assert 1 <= len(vectors.chunks) == len(vectors.chunk_words) == len(vectors.chunk_text_sha256) <= rules.max_chunks
    assert (vectors.top_k, vectors.raw_low, vectors.raw_high) == (rules.top_k, rules.calibration.raw_low,
                                                                   rules.calibration.raw_high)
    assert result.score is not None and 0.0 < result.score < 1.0 - R_TOLERANCE
    assert recompute_r(result) == pytest.approx(result.score, abs=R_TOLERANCE)
    assert recompute_mismatches(result) == []
    # the vectors are part of the evaluation, so of its hash and of the signed DBOM
    assert vectors.intent in evaluation.pretty_json()


def test_an_edited_vector_recomputes_to_a_different_r(evaluation: Evaluation) -> None:
    forged = semantic(edited(evaluation))
    assert recompute_r(forged) == 1.0
    problems = recompute_mismatches(forged)
    assert any("give R = 1.0000" in p for p in problems), problems
    honest = semantic(evaluation)
    assert honest.vectors is not None
    zero = honest.model_copy(update={"vectors": honest.vectors.model_copy(
        update={"intent": encode_vector([0.0] * 384)})})
    assert recompute_mismatches(zero) == ["a recorded vector is zero or not finite"]


def test_verify_recompute_passes_on_an_honest_record(tmp_path: Path, evaluation: Evaluation) -> None:
    home = tmp_path / "home"
    rid = append(home, evaluation)
    ok = invoke(home, "dbom", "verify", rid, "--recompute")
    assert ok.exit_code == 0, ok.stdout
    assert "OK: 1 record(s)" in ok.stdout


def test_an_edited_vector_not_re_signed_fails_the_hash_check(tmp_path: Path, evaluation: Evaluation) -> None:
    home = tmp_path / "home"
    rid = append(home, evaluation)
    forged = edited(evaluation).model_dump(mode="json")
    with sqlite3.connect(home / "battles.db") as db:
        db.execute("UPDATE dbom_records SET raw_result = ? WHERE id = ?", (json.dumps(forged), rid))
    broken = invoke(home, "dbom", "verify", rid, "--recompute", "--json")
    assert broken.exit_code == 1
    checks = {p["check"] for p in json.loads(broken.stdout)["problems"]}
    assert {"record", "recompute"} <= checks


def test_an_edited_vector_re_signed_is_caught_only_by_recompute(tmp_path: Path, evaluation: Evaluation) -> None:
    # whoever holds a signing key (their own ledger) records the edited vector with every hash consistent
    home = tmp_path / "home"
    rid = append(home, edited(evaluation))
    plain = invoke(home, "dbom", "verify", rid)
    assert plain.exit_code == 0, plain.stdout
    broken = invoke(home, "dbom", "verify", rid, "--recompute")
    assert broken.exit_code == 1
    assert "[recompute]" in broken.stdout and "give R = 1.0000" in broken.stdout
    every = invoke(home, "dbom", "verify", "--all", "--recompute")
    assert every.exit_code == 1 and "[recompute]" in every.stdout
