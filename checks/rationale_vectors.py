"""The vectors R was computed from, as the record keeps them, and R recomputed from them.

Pure: lists of floats in, :class:`~checks.models.RecordedVectors` out, and back. Vectors are stored as
little-endian IEEE 754 half precision (float16), base64: 384 dimensions take 1,024 characters, and R reads at most
``rationale.max_chunks`` chunks, so a record holds at most that many chunk vectors plus the intent's.

Recomputing R from float16 vectors differs from the float32 measurement by far less than
:data:`RAW_TOLERANCE`; a change to a recorded vector that moves R by more than :data:`R_TOLERANCE` is a mismatch.
(An edit smaller than that cannot change the verdict; the record's hash and signature catch any edit at all.)

Exceptions::

    VectorRecordError      the recorded vectors cannot be decoded (bad base64, wrong length, zero or non-finite)
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Sequence

from checks.cis import calibrate
from checks.models import RecordedVectors, SemanticResult, round_score, sha256_text

RAW_TOLERANCE = 0.002  # float16 storage moves a 384-dimension cosine by ~1e-4; stored values are rounded to 1e-4
R_TOLERANCE = 0.005


class VectorRecordError(ValueError):
    """The recorded vectors are malformed: R cannot be recomputed from them."""


def aggregate(similarities: Sequence[float], sizes: Sequence[int], top_k: int) -> float:
    """Size-weighted mean of the ``top_k`` best chunk similarities (ties broken by position)."""
    ranked = sorted(range(len(similarities)), key=lambda i: (-similarities[i], i))[: max(1, top_k)]
    weight = sum(max(1, sizes[i]) for i in ranked)
    return math.fsum(similarities[i] * max(1, sizes[i]) for i in ranked) / weight


def encode_vector(vector: Sequence[float]) -> str:
    """``vector`` as little-endian float16, base64."""
    return base64.b64encode(struct.pack(f"<{len(vector)}e", *vector)).decode("ascii")


def decode_vector(text: str, dims: int) -> list[float]:
    """A unit vector from :func:`encode_vector`'s text; :class:`VectorRecordError` if it is not ``dims`` finite,
    non-zero float16 values."""
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise VectorRecordError(f"a recorded vector is not base64: {exc}") from exc
    if len(data) != 2 * dims:
        raise VectorRecordError(f"a recorded vector has {len(data) // 2} dimensions, the record says {dims}")
    values = list(struct.unpack(f"<{dims}e", data))
    norm = math.sqrt(math.fsum(x * x for x in values))
    if norm == 0.0 or not math.isfinite(norm):
        raise VectorRecordError("a recorded vector is zero or not finite")
    return [x / norm for x in values]


def record_vectors(intent: Sequence[float], chunks: Sequence[Sequence[float]], chunk_words: Sequence[int],
                   chunk_texts: Sequence[str], *, top_k: int, raw_low: float, raw_high: float) -> RecordedVectors:
    """What R was computed from, ready for the record."""
    return RecordedVectors(dims=len(intent), intent=encode_vector(intent),
                           chunks=tuple(encode_vector(v) for v in chunks), chunk_words=tuple(chunk_words),
                           chunk_text_sha256=tuple(sha256_text(t) for t in chunk_texts), top_k=top_k,
                           raw_low=raw_low, raw_high=raw_high)


def recompute_raw(vectors: RecordedVectors) -> float:
    """R_raw from the recorded vectors: the size-weighted mean of the ``top_k`` best chunk cosines."""
    if not vectors.chunks or len(vectors.chunks) != len(vectors.chunk_words):
        raise VectorRecordError(f"the record holds {len(vectors.chunks)} chunk vectors and "
                                f"{len(vectors.chunk_words)} chunk sizes")
    intent = decode_vector(vectors.intent, vectors.dims)
    similarities = [math.fsum(x * y for x, y in zip(decode_vector(chunk, vectors.dims), intent, strict=True))
                    for chunk in vectors.chunks]
    return aggregate(similarities, vectors.chunk_words, vectors.top_k)


def recompute_r(result: SemanticResult) -> float:
    """R recomputed from the vectors ``result`` records (rounded as R is stored)."""
    if result.vectors is None:
        raise VectorRecordError("the record holds no vectors: R was not measured, or measured before they were kept")
    vectors = result.vectors
    return round_score(calibrate(recompute_raw(vectors), vectors.raw_low, vectors.raw_high))


def recompute_mismatches(result: SemanticResult) -> list[str]:
    """What disagrees between the R a record states and the R its vectors give (empty: they agree, or R was not
    measured)."""
    if not result.measured:
        return []
    if result.vectors is None:
        return ["R was measured but the record holds no vectors to recompute it from"]
    try:
        raw = recompute_raw(result.vectors)
        score = recompute_r(result)
    except VectorRecordError as exc:
        return [str(exc)]
    problems: list[str] = []
    if result.raw_similarity is None or abs(raw - result.raw_similarity) > RAW_TOLERANCE:
        problems.append(f"the recorded vectors give a raw cosine of {raw:.4f}, the record says "
                        f"{result.raw_similarity}")
    if result.score is None or abs(score - result.score) > R_TOLERANCE:
        problems.append(f"the recorded vectors give R = {score:.4f}, the record says R = {result.score}")
    return problems
