"""The lightest sentence-embedding backend: the same BERT encoder with mean pooling as :mod:`app.review.minilm`, in
NumPy alone (plus ``tokenizers`` and ``safetensors``) — no torch.

Why: importing torch costs about 1.5 s of CPU and 220 MiB of memory in a fresh process, more than the model itself
(22 M parameters, 90 MB). A CLI review loads the model while its sandboxed tests run on the same two cores, and a
worker keeps it for its lifetime; NumPy loads in a tenth of a second and a tenth of the memory.

What it computes is what :class:`app.review.minilm.MiniLM` computes, operation for operation, in float32: the same
tokenizer, truncation, padding and batches (:func:`app.review.minilm.encode_sorted`); embeddings, layer norms,
self-attention with the padding masked out, the exact (erf) GELU, mean pooling over the attention mask and L2
normalisation. Float32 sums in another order, and an erf good to about 1e-7, keep its vectors within a few 1e-7
of torch's — ``tests/rationale/test_minilm.py`` holds both backends to 1e-5 of sentence-transformers' ``encode``.

Only ``model.safetensors`` weights are read (a ``pytorch_model.bin`` needs torch to unpickle): anything else raises
:class:`~app.review.minilm.UnsupportedModel`, and the caller falls back to the torch backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.review.minilm import (
    EncoderWeights,
    MiniLMConfig,
    UnsupportedModel,
    encode_sorted,
    load_tokenizer,
    read_config,
)

if TYPE_CHECKING:
    import numpy
    from tokenizers import Tokenizer

    Array = numpy.ndarray[Any, Any]

# Abramowitz & Stegun 7.1.26: erf(x) = 1 - (a1 t + ... + a5 t^5) exp(-x^2), t = 1 / (1 + p x), for x >= 0; the
# formula's error is below 1.5e-7, and in float32 below 5e-7 (near 0 the subtraction from 1 loses digits; GELU
# multiplies erf by x/2 there, so its own error stays below 1e-8).
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(x: Array) -> Array:
    """erf of a float32 array, elementwise (NumPy has no erf of its own), in a few passes over two buffers."""
    import numpy

    f = numpy.float32
    a = numpy.abs(x)
    t = a * f(_ERF_P)
    t += f(1.0)
    numpy.reciprocal(t, out=t)
    poly = t * f(_ERF_A[4])
    for coefficient in reversed(_ERF_A[:4]):
        poly += f(coefficient)
        poly *= t
    numpy.square(a, out=a)
    numpy.negative(a, out=a)
    numpy.exp(a, out=a)
    poly *= a
    numpy.subtract(f(1.0), poly, out=poly)
    result: Array = numpy.copysign(poly, x, out=poly)
    return result


# Elementwise work runs over blocks this size (1 MiB of float32): its dozen passes then stay in the cache, three
# times faster than passes over a whole (batch, tokens, 1536) array.
BLOCK = 1 << 18


def gelu(x: Array) -> Array:
    """The exact GELU BERT uses, in place on a contiguous array: x · Φ(x) = x/2 · (1 + erf(x/√2))."""
    import numpy

    flat = x.reshape(-1)
    for start in range(0, flat.size, BLOCK):
        block = flat[start:start + BLOCK]
        phi = erf(block * numpy.float32(0.7071067811865476))
        phi += numpy.float32(1.0)
        phi *= numpy.float32(0.5)
        block *= phi
    return x


@dataclass(frozen=True)
class _Linear:
    """``x @ weight.T + bias``: the transposed view goes to BLAS as it is (no copy of the weights)."""

    weight: Array
    bias: Array

    def __call__(self, x: Array) -> Array:
        return x @ self.weight.T + self.bias


@dataclass(frozen=True)
class _Layer:
    query: _Linear
    key: _Linear
    value: _Linear
    attention_out: _Linear
    attention_norm: tuple[Array, Array]
    intermediate: _Linear
    output: _Linear
    output_norm: tuple[Array, Array]


class NumpyMiniLM:
    """A loaded model: :meth:`encode` has the subset of ``SentenceTransformer.encode``'s signature LogoMesh uses."""

    backend = "minilm-numpy"

    def __init__(self, config: MiniLMConfig, tokenizer: Tokenizer, weights: dict[str, Array]) -> None:
        import numpy

        self.config = config
        self.tokenizer = tokenizer
        parts = EncoderWeights.read(config, {name: numpy.ascontiguousarray(tensor, dtype=numpy.float32)
                                             for name, tensor in weights.items()})
        self.word_embeddings = parts.word_embeddings
        self.position_embeddings = parts.position_embeddings
        self.token_type_embeddings = parts.token_type_embeddings
        self.embedding_norm = parts.embedding_norm
        self.layers = [_Layer(**{field: pair if field.endswith("_norm") else _Linear(*pair)
                                 for field, pair in layer.items()})  # type: ignore[arg-type]
                       for layer in parts.layers]
        self.scaling = numpy.float32(config.head_size ** -0.5)

    @staticmethod
    def one_blas_thread() -> None:
        """Matrix products on one thread, process-wide: OpenBLAS's idle threads spin on the cores the sandboxed
        tests run on (a warm review took 15 % longer with two), and one thread sums in one, fixed order."""
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # without it, OpenBLAS keeps its default
            return
        threadpool_limits(limits=1, user_api="blas")

    @classmethod
    def load(cls, path: Path) -> NumpyMiniLM:
        """Read ``path``; :class:`UnsupportedModel` when it is not a model this backend runs (or NumPy,
        tokenizers or safetensors is missing)."""
        config = read_config(Path(path))
        if config.weights.suffix != ".safetensors":
            raise UnsupportedModel(config.path, f"{config.weights.name}: only safetensors weights load without torch")
        try:
            from safetensors.numpy import load_file

            tokenizer = load_tokenizer(config)
            weights = load_file(str(config.weights))
        except Exception as exc:  # ImportError, and tokenizers and safetensors raise plain Exception
            raise UnsupportedModel(config.path, f"cannot load without torch: {exc}") from exc
        cls.one_blas_thread()
        return cls(config, tokenizer, weights)

    def eval(self) -> NumpyMiniLM:
        """Inference only, always (``SentenceTransformer`` compatibility)."""
        return self

    def _layer_norm(self, x: Array, norm: tuple[Array, Array]) -> Array:
        import numpy

        mean = x.mean(axis=-1, keepdims=True)
        centred = x - mean
        variance = (centred * centred).mean(axis=-1, keepdims=True)
        scaled: Array = centred / numpy.sqrt(variance + numpy.float32(self.config.layer_norm_eps))
        return scaled * norm[0] + norm[1]

    def token_embeddings(self, input_ids: Array, attention_mask: Array) -> Array:
        """The last hidden state, ``(batch, tokens, hidden)``."""
        import numpy

        batch, length = input_ids.shape
        heads, head_size = self.config.num_heads, self.config.head_size
        hidden = self.word_embeddings[input_ids] + self.token_type_embeddings[0]
        hidden = self._layer_norm(hidden + self.position_embeddings[:length], self.embedding_norm)
        # padding keys get no weight: a large negative score before the softmax (transformers uses float32's min)
        blocked = numpy.where(attention_mask[:, None, None, :] == 0, numpy.finfo(numpy.float32).min,
                              numpy.float32(0.0)).astype(numpy.float32)

        def split(x: Array) -> Array:
            return x.reshape(batch, length, heads, head_size).transpose(0, 2, 1, 3)

        context = numpy.empty((batch, heads, length, head_size), dtype=numpy.float32)
        for layer in self.layers:
            query, key, value = split(layer.query(hidden)), split(layer.key(hidden)), split(layer.value(hidden))
            for row in range(batch):  # one text at a time: its (heads, tokens, tokens) scores stay in the cache
                scores = query[row] @ key[row].transpose(0, 2, 1)
                scores *= self.scaling
                scores += blocked[row]
                scores -= scores.max(axis=-1, keepdims=True)
                numpy.exp(scores, out=scores)
                scores /= scores.sum(axis=-1, keepdims=True)
                numpy.matmul(scores, value[row], out=context[row])
            merged = context.transpose(0, 2, 1, 3).reshape(batch, length, heads * head_size)
            attended = self._layer_norm(layer.attention_out(merged) + hidden, layer.attention_norm)
            hidden = self._layer_norm(layer.output(gelu(layer.intermediate(attended))) + attended, layer.output_norm)
        return hidden

    def _embed_batch(self, texts: Sequence[str]) -> Array:
        import numpy

        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=True)
        input_ids = numpy.array([e.ids for e in encodings], dtype=numpy.int64)
        attention_mask = numpy.array([e.attention_mask for e in encodings], dtype=numpy.int64)
        tokens = self.token_embeddings(input_ids, attention_mask)
        mask = attention_mask[:, :, None].astype(numpy.float32)
        pooled: Array = (tokens * mask).sum(axis=1) / numpy.maximum(mask.sum(axis=1), numpy.float32(1e-9))
        return self._normalised(pooled) if self.config.normalize else pooled

    @staticmethod
    def _normalised(vectors: Array) -> Array:
        import numpy

        norms = numpy.linalg.norm(vectors, axis=1, keepdims=True)
        result: Array = vectors / numpy.maximum(norms, numpy.float32(1e-12))
        return result

    def encode(self, texts: Sequence[str], batch_size: int = 32, convert_to_numpy: bool = True,
               normalize_embeddings: bool = False, show_progress_bar: bool = False) -> Array:
        """``(len(texts), hidden)`` float32 vectors, batched like sentence-transformers (longest texts first)."""

        def embed(batch: list[str]) -> Array:
            vectors = self._embed_batch(batch)
            return self._normalised(vectors) if normalize_embeddings else vectors

        return encode_sorted(texts, self.config, batch_size, embed)
