"""A report's text as overlapping chunks that can be queried, so no long report collapses into one blob.

Chunks keep their page number; :meth:`DocumentIndex.query` ranks them by term overlap weighted by inverse
document frequency (a small, deterministic BM25-like score — ties broken by position), which is enough to
find the passage where a report talks about a concept.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from checks.audit.models import ReportDocument

CHUNK_WORDS = 120
OVERLAP_WORDS = 20
TOKEN = re.compile(r"[a-z0-9_]+(?:[-./][a-z0-9_]+)*")
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has", "have", "how", "in", "is",
    "it", "its", "of", "on", "or", "rather", "than", "that", "the", "their", "there", "this", "to", "was", "what",
    "when", "where", "which", "with",
})
MIN_PASSAGE_WORDS = 5


def tokens(text: str) -> list[str]:
    return [t for t in TOKEN.findall(text.lower()) if t not in STOPWORDS]


@dataclass(frozen=True)
class Chunk:
    page: int
    index: int
    text: str


class DocumentIndex:
    def __init__(self, document: ReportDocument, chunk_words: int = CHUNK_WORDS,
                 overlap_words: int = OVERLAP_WORDS) -> None:
        if not 0 <= overlap_words < chunk_words:
            raise ValueError("overlap_words must be below chunk_words")
        self.chunks: list[Chunk] = []
        for page in document.pages:
            words = page.text.split()
            step = chunk_words - overlap_words
            for start in range(0, max(len(words), 1), step):
                piece = words[start:start + chunk_words]
                if piece:
                    self.chunks.append(Chunk(page.number, len(self.chunks), " ".join(piece)))
                if start + chunk_words >= len(words):
                    break
        self._counts = [Counter(tokens(c.text)) for c in self.chunks]
        frequency: Counter[str] = Counter()
        for counts in self._counts:
            frequency.update(counts.keys())
        total = max(len(self.chunks), 1)
        self._idf = {t: math.log(1 + total / n) for t, n in frequency.items()}
        self.words = sum(len(p.text.split()) for p in document.pages)

    def query(self, text: str, k: int = 3) -> list[Chunk]:
        """The ``k`` chunks that best match ``text``; chunks sharing no term with it are never returned."""
        wanted = set(tokens(text))
        scored: list[tuple[float, int]] = []
        for i, counts in enumerate(self._counts):
            score = sum((1 + math.log(counts[t])) * self._idf[t] for t in wanted if counts.get(t))
            if score > 0:
                scored.append((score, i))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [self.chunks[i] for _score, i in scored[:k]]

    def passage(self, text: str, k: int = 3) -> tuple[int, str] | None:
        """The sentence among the ``k`` best chunks that shares the most (IDF-weighted) terms with ``text``."""
        from checks.audit.claims import sentences

        wanted = set(tokens(text))
        best: tuple[float, int, int, str] | None = None
        for rank, chunk in enumerate(self.query(text, k=k)):
            candidates = sentences(chunk.text)
            # headings ("Architecture.") match well and say nothing: prefer real sentences when there are any
            candidates = [c for c in candidates if len(c.split()) >= MIN_PASSAGE_WORDS] or candidates
            for sentence in candidates:
                score = sum(self._idf.get(t, 0.0) for t in wanted & set(tokens(sentence)))
                if best is None or score > best[0]:
                    best = (score, rank, chunk.page, sentence)
        if best is None or best[0] == 0:
            return None
        return best[2], best[3]

    def contains(self, phrase: str) -> list[Chunk]:
        """Chunks holding ``phrase`` (case-insensitive, white space normalised), in document order."""
        needle = " ".join(phrase.lower().split())
        return [c for c in self.chunks if needle in " ".join(c.text.lower().split())]
