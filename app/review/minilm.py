"""A light sentence-embedding backend: a BERT encoder with mean pooling, in plain torch + tokenizers + safetensors.

Why: ``import sentence_transformers`` takes about ten seconds in a fresh process (it pulls in transformers,
scikit-learn, scipy and thousands of modules) before the model even loads; this module needs only ``torch``,
``tokenizers`` and ``safetensors`` and loads all-MiniLM-L6-v2 in a fraction of that.

What it computes is what sentence-transformers computes for a ``Transformer → Pooling(mean) [→ Normalize]``
model directory: the same fast tokenizer (``tokenizer.json``) with truncation at ``max_seq_length`` from
``sentence_bert_config.json`` and padding to the longest text of the batch; the same torch operations, in the
same order, as transformers' ``BertModel`` with SDPA attention; mean pooling over the attention mask; L2
normalisation; and the same batches (texts sorted by length, longest first). On one machine the vectors agree
with sentence-transformers' ``encode`` bit for bit; ``tests/rationale/test_minilm.py`` holds them to 1e-5.

Anything this module does not implement — another architecture, activation, pooling, or no ``tokenizer.json`` —
raises :class:`UnsupportedModel` at load time, and the caller (:mod:`app.review.embeddings`) falls back to
sentence-transformers. Importing this module imports no torch; :meth:`MiniLM.load` does.

Exceptions::

    UnsupportedModel (ValueError)   the directory is not a model this backend can run; ``path`` and why
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy
    import torch
    from tokenizers import Tokenizer

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_MODULE_KINDS = ("Transformer", "Pooling", "Normalize")
_OTHER_POOLING_KEYS = ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                       "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")


class UnsupportedModel(ValueError):
    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@dataclass(frozen=True)
class MiniLMConfig:
    """What the forward pass needs, read from the model directory's JSON files (no torch)."""

    path: Path
    weights: Path
    hidden_size: int
    num_heads: int
    num_layers: int
    layer_norm_eps: float
    max_position_embeddings: int
    max_seq_length: int
    pad_token_id: int
    do_lower_case: bool
    normalize: bool

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_heads


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _kind(module_type: str) -> str:
    """``sentence_transformers.models.Pooling`` (or a newer module path) → ``Pooling``."""
    return module_type.rsplit(".", 1)[-1]


def _check_pooling(path: Path, pooling: dict[str, Any]) -> None:
    if "pooling_mode" in pooling:  # the newer single-key form
        mode = pooling["pooling_mode"]
        modes = [mode] if isinstance(mode, str) else list(mode)
        if modes != ["mean"]:
            raise UnsupportedModel(path, f"pooling mode {mode!r}: only mean pooling is implemented")
        return
    if not pooling.get("pooling_mode_mean_tokens", False) or any(pooling.get(key) for key in _OTHER_POOLING_KEYS):
        raise UnsupportedModel(path, "only mean pooling (pooling_mode_mean_tokens alone) is implemented")


def read_config(path: Path) -> MiniLMConfig:
    """The configuration of the sentence-transformers directory ``path``; :class:`UnsupportedModel` if this
    backend cannot reproduce it exactly."""
    try:
        modules = _json(path / "modules.json")
        config = _json(path / "config.json")
    except (OSError, ValueError) as exc:
        raise UnsupportedModel(path, f"cannot read modules.json / config.json: {exc}") from exc
    kinds = [_kind(str(module.get("type", ""))) for module in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise UnsupportedModel(path, f"modules {kinds}: only Transformer → Pooling [→ Normalize] is implemented")
    if modules[0].get("path", "") not in ("", "."):
        raise UnsupportedModel(path, "the Transformer module is not at the top of the directory")
    try:
        pooling = _json(path / str(modules[1].get("path", "1_Pooling")) / "config.json")
    except (OSError, ValueError) as exc:
        raise UnsupportedModel(path, f"cannot read the pooling configuration: {exc}") from exc
    _check_pooling(path, pooling)
    architectures = config.get("architectures") or ["BertModel"]
    if config.get("model_type") != "bert" or architectures != ["BertModel"]:
        raise UnsupportedModel(path, f"model type {config.get('model_type')!r} {architectures}: only BertModel")
    if config.get("hidden_act", "gelu") != "gelu":
        raise UnsupportedModel(path, f"activation {config.get('hidden_act')!r}: only exact gelu is implemented")
    if config.get("position_embedding_type", "absolute") != "absolute" or config.get("is_decoder", False):
        raise UnsupportedModel(path, "only an encoder with absolute position embeddings is implemented")
    if not (path / "tokenizer.json").is_file():
        raise UnsupportedModel(path, "no tokenizer.json (the fast tokenizer) in the model directory")
    weights = next((path / name for name in WEIGHT_FILES if (path / name).is_file()), None)
    if weights is None:
        raise UnsupportedModel(path, f"no weights ({' or '.join(WEIGHT_FILES)})")
    st_config = _json(path / "sentence_bert_config.json") if (path / "sentence_bert_config.json").is_file() else {}
    tokenizer_config = _json(path / "tokenizer_config.json") if (path / "tokenizer_config.json").is_file() else {}
    max_positions = int(config.get("max_position_embeddings", 512))
    max_seq_length = st_config.get("max_seq_length")
    if max_seq_length is None:  # what sentence-transformers does without a configured length
        max_seq_length = min(max_positions, int(tokenizer_config.get("model_max_length", max_positions)))
    hidden_size, num_heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    if hidden_size % num_heads:
        raise UnsupportedModel(path, f"hidden size {hidden_size} is not a multiple of {num_heads} heads")
    return MiniLMConfig(
        path=path, weights=weights, hidden_size=hidden_size, num_heads=num_heads,
        num_layers=int(config["num_hidden_layers"]), layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        max_position_embeddings=max_positions, max_seq_length=min(int(max_seq_length), max_positions),
        pad_token_id=int(config.get("pad_token_id", 0)), do_lower_case=bool(st_config.get("do_lower_case", False)),
        normalize=kinds[-1] == "Normalize",
    )


def _load_weights(config: MiniLMConfig) -> dict[str, torch.Tensor]:
    import torch

    if config.weights.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(config.weights), device="cpu")
    else:
        state = torch.load(str(config.weights), map_location="cpu", weights_only=True)
    return {name: tensor.to(torch.float32) for name, tensor in state.items()}


def load_tokenizer(config: MiniLMConfig) -> Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(config.path / "tokenizer.json"))
    # tokenizer.json may carry its own fixed padding/truncation; sentence-transformers overrides both per call
    tokenizer.no_padding()
    tokenizer.no_truncation()
    tokenizer.enable_truncation(max_length=config.max_seq_length, strategy="longest_first", stride=0)
    pad_token = tokenizer.id_to_token(config.pad_token_id) or "[PAD]"
    tokenizer.enable_padding(direction="right", pad_id=config.pad_token_id, pad_type_id=0, pad_token=pad_token)
    return tokenizer


_LAYER_PARTS = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
                "attention_out": "attention.output.dense", "attention_norm": "attention.output.LayerNorm",
                "intermediate": "intermediate.dense", "output": "output.dense", "output_norm": "output.LayerNorm"}


@dataclass(frozen=True)
class EncoderWeights:
    """A BERT encoder's weights by part, in either backend's array type (torch tensors or NumPy arrays). Each
    layer maps the part's name to its (weight, bias); the parts ending in ``_norm`` are layer norms, the others
    linear maps."""

    word_embeddings: Any
    position_embeddings: Any
    token_type_embeddings: Any
    embedding_norm: tuple[Any, Any]
    layers: tuple[dict[str, tuple[Any, Any]], ...]

    @classmethod
    def read(cls, config: MiniLMConfig, state: dict[str, Any]) -> EncoderWeights:
        """The parts ``config`` needs from a checkpoint's ``state`` (a task model's "bert." prefix dropped);
        :class:`UnsupportedModel` names a missing part or a mismatched size."""
        state = {name.removeprefix("bert."): tensor for name, tensor in state.items()}

        def weight(name: str) -> Any:
            if name not in state:
                raise UnsupportedModel(config.path, f"the weights have no {name}")
            return state[name]

        def pair(prefix: str) -> tuple[Any, Any]:
            return weight(f"{prefix}.weight"), weight(f"{prefix}.bias")

        parts = cls(
            word_embeddings=weight("embeddings.word_embeddings.weight"),
            position_embeddings=weight("embeddings.position_embeddings.weight"),
            token_type_embeddings=weight("embeddings.token_type_embeddings.weight"),
            embedding_norm=pair("embeddings.LayerNorm"),
            layers=tuple({field: pair(f"encoder.layer.{i}.{name}") for field, name in _LAYER_PARTS.items()}
                         for i in range(config.num_layers)))
        if parts.word_embeddings.shape[1] != config.hidden_size:
            raise UnsupportedModel(config.path, "the word embeddings do not match hidden_size")
        return parts


@dataclass(frozen=True)
class _Layer:
    query: tuple[torch.Tensor, torch.Tensor]
    key: tuple[torch.Tensor, torch.Tensor]
    value: tuple[torch.Tensor, torch.Tensor]
    attention_out: tuple[torch.Tensor, torch.Tensor]
    attention_norm: tuple[torch.Tensor, torch.Tensor]
    intermediate: tuple[torch.Tensor, torch.Tensor]
    output: tuple[torch.Tensor, torch.Tensor]
    output_norm: tuple[torch.Tensor, torch.Tensor]


class MiniLM:
    """A loaded model: :meth:`encode` has the subset of ``SentenceTransformer.encode``'s signature LogoMesh uses."""

    backend = "minilm"

    def __init__(self, config: MiniLMConfig, tokenizer: Tokenizer, weights: dict[str, torch.Tensor]) -> None:
        import torch

        self.config = config
        self.tokenizer = tokenizer
        parts = EncoderWeights.read(config, weights)
        self.word_embeddings = parts.word_embeddings
        self.position_embeddings = parts.position_embeddings
        self.token_type_embeddings = parts.token_type_embeddings
        self.embedding_norm = parts.embedding_norm
        self.layers = [_Layer(**layer) for layer in parts.layers]
        self.position_ids = torch.arange(config.max_position_embeddings).expand((1, -1))
        self.scaling = config.head_size ** -0.5

    @classmethod
    def load(cls, path: Path) -> MiniLM:
        """Read ``path``; :class:`UnsupportedModel` when it is not a model this backend runs exactly."""
        config = read_config(Path(path))
        try:
            tokenizer = load_tokenizer(config)
            weights = _load_weights(config)
        except Exception as exc:  # tokenizers and safetensors raise plain Exception
            raise UnsupportedModel(config.path, f"cannot load: {exc}") from exc
        return cls(config, tokenizer, weights)

    def eval(self) -> MiniLM:
        """Inference only, always (``SentenceTransformer`` compatibility)."""
        return self

    def _layer_norm(self, x: torch.Tensor, norm: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        from torch.nn import functional

        return functional.layer_norm(x, (self.config.hidden_size,), norm[0], norm[1], self.config.layer_norm_eps)

    def token_embeddings(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The last hidden state, ``(batch, tokens, hidden)``: transformers' ``BertModel`` forward, op for op."""
        import torch
        from torch.nn import functional

        batch, length = input_ids.shape
        heads, head_size = self.config.num_heads, self.config.head_size
        position_ids = self.position_ids[:, :length]
        token_type_ids = torch.zeros_like(input_ids)
        hidden = functional.embedding(input_ids, self.word_embeddings) \
            + functional.embedding(token_type_ids, self.token_type_embeddings)
        hidden = hidden + functional.embedding(position_ids, self.position_embeddings)
        hidden = self._layer_norm(hidden, self.embedding_norm)
        # no padding in the batch: no mask at all, as transformers skips it
        mask = None if bool(attention_mask.all()) else \
            attention_mask.bool()[:, None, None, :].expand(batch, 1, length, length).contiguous()
        split = (batch, length, -1, head_size)
        for layer in self.layers:
            query = functional.linear(hidden, *layer.query).view(split).transpose(1, 2)
            key = functional.linear(hidden, *layer.key).view(split).transpose(1, 2)
            value = functional.linear(hidden, *layer.value).view(split).transpose(1, 2)
            context = functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=0.0,
                                                              scale=self.scaling, is_causal=False)
            context = context.reshape(batch, heads, length, head_size).transpose(1, 2).contiguous()
            context = context.reshape(batch, length, -1).contiguous()
            attended = self._layer_norm(functional.linear(context, *layer.attention_out) + hidden,
                                        layer.attention_norm)
            intermediate = functional.gelu(functional.linear(attended, *layer.intermediate))
            hidden = self._layer_norm(functional.linear(intermediate, *layer.output) + attended, layer.output_norm)
        return hidden

    def _embed_batch(self, texts: Sequence[str]) -> torch.Tensor:
        import torch
        from torch.nn import functional

        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=True)
        input_ids = torch.tensor([e.ids for e in encodings], dtype=torch.int64)
        attention_mask = torch.tensor([e.attention_mask for e in encodings], dtype=torch.int64)
        tokens = self.token_embeddings(input_ids, attention_mask)
        mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
        summed = (tokens * mask).sum(dim=1, dtype=tokens.dtype)
        counts = torch.clamp(mask.sum(dim=1, dtype=tokens.dtype), min=1e-9)
        pooled = summed / counts
        if self.config.normalize:
            pooled = functional.normalize(pooled, p=2, dim=-1)
        return pooled

    def encode(self, texts: Sequence[str], batch_size: int = 32, convert_to_numpy: bool = True,
               normalize_embeddings: bool = False, show_progress_bar: bool = False) -> numpy.ndarray[Any, Any]:
        """``(len(texts), hidden)`` float32 vectors, batched like sentence-transformers (longest texts first)."""
        import torch
        from torch.nn import functional

        def embed(batch: list[str]) -> numpy.ndarray[Any, Any]:
            vectors = self._embed_batch(batch)
            if normalize_embeddings:
                vectors = functional.normalize(vectors, p=2, dim=1)
            return vectors.float().numpy()

        with torch.inference_mode():
            return encode_sorted(texts, self.config, batch_size, embed)


def encode_sorted(texts: Sequence[str], config: MiniLMConfig, batch_size: int,
                  embed: Callable[[list[str]], numpy.ndarray[Any, Any]]) -> numpy.ndarray[Any, Any]:
    """``embed`` over ``texts`` in sentence-transformers' batches — sorted by length, longest first, so the same
    texts share a batch and its padding — and the rows back in the texts' order."""
    import numpy

    if isinstance(texts, str):
        raise TypeError("encode takes a sequence of texts, not one str")
    inputs = [text.lower() if config.do_lower_case else text for text in texts]
    if not inputs:
        return numpy.zeros((0, config.hidden_size), dtype=numpy.float32)
    order = numpy.argsort([-len(text) for text in inputs])
    rows = numpy.concatenate([embed([inputs[i] for i in order[start:start + batch_size]])
                              for start in range(0, len(inputs), batch_size)])
    return numpy.ascontiguousarray(rows[numpy.argsort(order)], dtype=numpy.float32)
