"""The real embedding model, loaded once for the whole test session."""

from __future__ import annotations

import pytest

from rubric import Rubric, load_rubric


@pytest.fixture(scope="session")
def embedder():
    from app.embeddings import SentenceEmbedder, model_available

    missing = model_available(None)
    if missing is not None:
        pytest.fail(f"the rationale tests need the real model: {missing}")
    return SentenceEmbedder.load()


@pytest.fixture(scope="session")
def rubric() -> Rubric:
    return load_rubric()
