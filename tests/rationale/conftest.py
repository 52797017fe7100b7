"""The real embedding model, loaded once for the whole test session."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from rubric import Rubric, load_rubric

if TYPE_CHECKING:
    from app.review.embeddings import SentenceEmbedder


@pytest.fixture(scope="session")
def embedder() -> SentenceEmbedder:
    from app.review.embeddings import SentenceEmbedder, model_available

    missing = model_available(None)
    if missing is not None:
        pytest.fail(f"the rationale tests need the real model: {missing}")
    return SentenceEmbedder.load()


@pytest.fixture(scope="session")
def rubric() -> Rubric:
    return load_rubric()
