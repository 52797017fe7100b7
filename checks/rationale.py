"""Rationale Integrity (R): how close the changed code's meaning is to the change's stated intent.

Pure: texts in, vectors from an :class:`~checks.protocols.Embedder`, a score out. Every constant comes from the
rubric's ``rationale`` section.

How R is computed
-----------------
1. **Intent text** — the PR title, the body (Markdown stripped of images, HTML comments, tags and link
   targets) and the linked issues the caller provides. When the body is empty the commit messages stand in
   (a weaker source, and the evidence says so). Long intent is cut into word windows whose vectors are
   averaged (weighted by words) into one intent vector.
2. **Code text** — only what the diff adds, never whole files. Python files are grouped by the innermost
   function or class enclosing each added line (its qualified name and docstring travel with the chunk as
   context); other files, and module-level Python lines, form one stream per file. Identifiers are split
   (``snake_case``/``camelCase`` → words), comments and docstrings are kept, syntax noise is dropped.
3. **Echo stripping** — any run of ``echo_ngram`` consecutive words that also occurs in the intent is
   removed from the code text first: a PR cannot raise R by pasting its own description into a comment.
4. **Chunks** — each group is cut into windows of at most ``window_words`` words (well under MiniLM's 256
   word-piece limit, so nothing is silently truncated). Beyond ``max_chunks`` a deterministic sample is kept,
   chosen by the SHA-256 of each chunk's path, line and text, and the evidence says so.
5. **Aggregation** — every chunk is embedded in one batch; its cosine with the intent vector is computed;
   R_raw is the mean of the ``top_k`` best chunk similarities weighted by chunk size (in words). One relevant
   function in a large PR therefore counts fully, while a single tiny chunk cannot dominate.
6. **Calibration** — R = clamp((R_raw − raw_low) / (raw_high − raw_low)), both stored rounded to 4 decimals.
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from checks import cis
from checks.diff import DiffError, parse_diff
from checks.errors import DetectiveError
from checks.models import Case, ChangedFile, DetectiveReport, Evidence, SemanticResult, round_score
from checks.protocols import Embedder
from rubric import Rubric

DETECTIVE = "semantic"

# Language keywords and single letters carry no meaning about *what* a change is for; dropping them leaves
# room in each window for the words that do.
_SYNTAX = """def class self cls return none true false elif else if pass lambda async await const let var function
    func fn pub impl struct void null nil int str bool dict list tuple float any end begin then do done fi
    esac in is not and or import from as with try except finally raise yield while for new this super
    public private protected static final override the"""
SYNTAX_WORDS = frozenset(_SYNTAX.split())
IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
PYTHON_SUFFIXES = (".py", ".pyi")

# PR text is untrusted: every repeat is bounded so that a body like "[[[[…" costs linear time, not quadratic.
MD_IMAGE_RE = re.compile(r"!\[[^\]\n]{0,300}\]\([^)\s]{0,1000}\)")
MD_LINK_RE = re.compile(r"\[([^\]\n]{0,300})\]\([^)\s]{0,1000}\)")
HTML_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
HTML_TAG_RE = re.compile(r"</?[A-Za-z][^>\n]{0,300}>")
URL_RE = re.compile(r"https?://\S+")
MD_NOISE_RE = re.compile(r"[`*_#>|~]+")


# --- words -------------------------------------------------------------------------------------------------


def split_identifier(identifier: str) -> list[str]:
    """``parseHTTPResponse_v2`` → ``["parse", "http", "response", "v", "2"]`` (lower case)."""
    words: list[str] = []
    for part in identifier.split("_"):
        words.extend(w.lower() for w in CAMEL_RE.findall(part))
    return words


def code_words(line: str) -> list[str]:
    """The meaningful words of one line of code or prose: identifiers split, syntax and single letters dropped."""
    words: list[str] = []
    for identifier in IDENTIFIER_RE.findall(line):
        words.extend(w for w in split_identifier(identifier) if len(w) > 1 and w not in SYNTAX_WORDS)
    return words


def clean_markdown(text: str) -> str:
    """PR text as prose: no images, HTML comments, tags, URLs or Markdown punctuation; identifiers split."""
    text = HTML_COMMENT_RE.sub(" ", text)
    text = MD_IMAGE_RE.sub(" ", text)
    text = MD_LINK_RE.sub(r"\1", text)
    text = HTML_TAG_RE.sub(" ", text)
    text = URL_RE.sub(" ", text)
    text = MD_NOISE_RE.sub(" ", text)

    def humanize(match: re.Match[str]) -> str:
        token = match.group(0)
        if "_" in token or any(c.isupper() for c in token[1:]):
            return " ".join(split_identifier(token))
        return token

    lines = [" ".join(IDENTIFIER_RE.sub(humanize, line).split()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line).strip()


# --- intent ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Intent:
    text: str
    sources: tuple[str, ...]
    fallback_to_commits: bool


def build_intent(case: Case) -> Intent:
    """The stated intent and where it came from. Commit messages stand in only when the body is empty."""
    parts: list[str] = []
    sources: list[str] = []
    title = clean_markdown(case.title)
    if title:
        parts.append(title)
        sources.append("title")
    body = clean_markdown(case.body)
    if body:
        parts.append(body)
        sources.append("body")
    for number, issue in enumerate(case.linked_issues, start=1):
        cleaned = clean_markdown(issue)
        if cleaned:
            parts.append(cleaned)
            sources.append(f"linked-issue-{number}")
    fallback = False
    if not body:
        seen: set[str] = set()
        messages: list[str] = []
        for commit in case.commits:
            message = clean_markdown(commit.message)
            if message and not message.startswith("Merge ") and message not in seen:
                seen.add(message)
                messages.append(message)
        if messages:
            parts.extend(messages)
            sources.append("commit-messages")
            fallback = True
    return Intent(text="\n".join(parts), sources=tuple(sources), fallback_to_commits=fallback)


def limit_words(text: str, max_words: int) -> tuple[str, bool]:
    """The first ``max_words`` words of ``text`` (a statement of intent front-loads its purpose)."""
    words = text.split()
    if len(words) <= max_words:
        return text, False
    return " ".join(words[:max_words]), True


def intent_windows(text: str, window_words: int) -> list[tuple[str, int]]:
    """Cut prose into windows of at most ``window_words`` words: (text, word count)."""
    words = text.split()
    return [(" ".join(words[i:i + window_words]), len(words[i:i + window_words]))
            for i in range(0, len(words), window_words)]


# --- code --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """One embeddable piece of the change: a header for context plus at most ``window_words`` content words."""

    path: str
    start_line: int
    end_line: int
    label: str
    header: tuple[str, ...]
    words: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join((*self.header, *self.words))

    @property
    def size(self) -> int:
        return len(self.words)

    @property
    def location(self) -> str:
        if self.start_line == self.end_line:
            return f"{self.path}:{self.start_line}"
        return f"{self.path}:{self.start_line}-{self.end_line}"

    def sample_key(self) -> str:
        return hashlib.sha256(f"{self.path}\0{self.start_line}\0{self.text}".encode()).hexdigest()


@dataclass(frozen=True)
class _Scope:
    qualname: str
    start: int
    end: int
    docstring: str | None


def python_scopes(source: str) -> list[_Scope] | None:
    """Every function and class in ``source`` with its line span; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    scopes: list[_Scope] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}.{child.name}" if prefix else child.name
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                scopes.append(_Scope(name, start, child.end_lineno or child.lineno, ast.get_docstring(child)))
                visit(child, name)
            else:
                visit(child, prefix)

    visit(tree, "")
    return scopes


def _innermost(scopes: Sequence[_Scope], line: int) -> _Scope | None:
    best: _Scope | None = None
    for scope in scopes:
        if scope.start <= line <= scope.end and (best is None or scope.end - scope.start <= best.end - best.start):
            best = scope
    return best


def added_lines_by_path(case: Case) -> dict[str, list[tuple[int, str]]]:
    """The text the diff adds, per path, as (head line number, line). Falls back to head content by line.

    Only paths in ``case.files`` count: the caller has already dropped the ones the repository ignores.
    """
    added: dict[str, list[tuple[int, str]]] = {}
    wanted = {changed.path for changed in case.files}
    try:
        for delta in parse_diff(case.diff):
            if delta.path in wanted and not delta.is_binary and delta.added_text:
                added[delta.path] = list(zip(delta.added_lines, delta.added_text, strict=True))
    except DiffError:
        added = {}
    for changed in case.files:
        if changed.path in added or changed.content is None or changed.is_binary or changed.is_symlink:
            continue
        lines = changed.content.splitlines()
        added[changed.path] = [(n, lines[n - 1]) for n in changed.added_lines if 0 < n <= len(lines)]
    return added


@dataclass
class _Group:
    """Added lines that belong together (one function, or a file's other lines), as per-line words."""

    label: str
    context: list[str]
    lines: list[tuple[int, list[str]]]

    def size(self) -> int:
        return sum(len(words) for _, words in self.lines)


def _groups_for_file(changed: ChangedFile | None, path: str, lines: Sequence[tuple[int, str]],
                     min_words: int) -> list[_Group]:
    scopes = None
    if changed is not None and changed.content is not None and path.endswith(PYTHON_SUFFIXES):
        scopes = python_scopes(changed.content)
    rest = _Group(label=path, context=[], lines=[])
    if not scopes:
        rest.lines = [(n, code_words(text)) for n, text in lines]
        return [rest] if rest.size() else []
    by_scope: dict[str, _Group] = {}
    added_numbers = {n for n, _ in lines}
    for number, text in lines:
        scope = _innermost(scopes, number)
        if scope is None:
            rest.lines.append((number, code_words(text)))
            continue
        group = by_scope.get(scope.qualname)
        if group is None:
            context = code_words(scope.qualname.replace(".", " "))
            # The docstring explains the function even when the diff only touches its body.
            if scope.docstring and scope.start not in added_numbers:
                context.extend(code_words(scope.docstring)[:32])
            group = by_scope[scope.qualname] = _Group(label=f"{path}:{scope.qualname}", context=context, lines=[])
        group.lines.append((number, code_words(text)))
    groups: list[_Group] = []
    for group in by_scope.values():
        if group.size() >= min_words:
            groups.append(group)
        else:
            rest.lines.extend(group.lines)
    if rest.size():
        rest.lines.sort(key=lambda item: item[0])
        groups.append(rest)
    return groups


def strip_echo(group: _Group, intent_ngrams: frozenset[tuple[str, ...]], n: int) -> int:
    """Remove every run of ``n`` words that also occurs in the intent; return how many words went."""
    flat = [(i, j, w) for i, (_, words) in enumerate(group.lines) for j, w in enumerate(words)]
    if n <= 0 or len(flat) < n or not intent_ngrams:
        return 0
    marked: set[int] = set()
    for k in range(len(flat) - n + 1):
        if tuple(w for _, _, w in flat[k:k + n]) in intent_ngrams:
            marked.update(range(k, k + n))
    if not marked:
        return 0
    keep: dict[int, list[str]] = {i: [] for i in range(len(group.lines))}
    for k, (i, _, word) in enumerate(flat):
        if k not in marked:
            keep[i].append(word)
    group.lines = [(number, keep[i]) for i, (number, _) in enumerate(group.lines)]
    return len(marked)


def _window(group: _Group, path: str, header: list[str], window_words: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    current: list[str] = []
    first = last = 0

    def flush() -> None:
        nonlocal current
        if current:
            chunks.append(Chunk(path=path, start_line=first, end_line=last, label=group.label,
                                header=tuple(header), words=tuple(current)))
        current = []

    for number, words in group.lines:
        for word in words:
            if len(current) >= window_words:
                flush()
            if not current:
                first = number
            current.append(word)
            last = number
    flush()
    return chunks


@dataclass(frozen=True)
class CodeText:
    chunks: tuple[Chunk, ...]
    total_chunks: int
    echo_words_removed: int
    files: int


def build_code_chunks(case: Case, rubric: Rubric, intent_text: str) -> CodeText:
    """Chunk the added code (echo-stripped, windowed) and apply the deterministic cap."""
    rules = rubric.rationale
    n = rules.echo_ngram
    # The same word filter on both sides, so a comment that pastes the description matches word for word.
    intent_tokens = code_words(intent_text)
    ngrams = frozenset(tuple(intent_tokens[i:i + n]) for i in range(len(intent_tokens) - n + 1))
    files = {f.path: f for f in case.files}
    chunks: list[Chunk] = []
    removed = 0
    added = added_lines_by_path(case)
    for path in sorted(added):
        changed = files.get(path)
        if changed is not None and (changed.is_binary or changed.is_symlink):
            continue
        # The path names the area of the change (``shop/shipping``); its extension says nothing about intent.
        header = code_words(str(PurePosixPath(path).with_suffix("")).replace("/", " "))
        for group in _groups_for_file(changed, path, added[path], rules.min_chunk_words):
            removed += strip_echo(group, ngrams, n)
            chunks.extend(_window(group, path, header + group.context, rules.window_words))
    total = len(chunks)
    if total > rules.max_chunks:
        keep = set(sorted(range(total), key=lambda i: chunks[i].sample_key())[: rules.max_chunks])
        chunks = [c for i, c in enumerate(chunks) if i in keep]
    return CodeText(chunks=tuple(chunks), total_chunks=total, echo_words_removed=removed, files=len(added))


# --- vectors -----------------------------------------------------------------------------------------------


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0 or not math.isfinite(norm):
        raise DetectiveError(DETECTIVE, "the embedding model returned a zero or non-finite vector")
    return [x / norm for x in vector]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def mean_vector(vectors: Sequence[Sequence[float]], weights: Sequence[int]) -> list[float]:
    total = sum(weights)
    dims = len(vectors[0])
    return _unit([math.fsum(v[d] * w for v, w in zip(vectors, weights, strict=True)) / total
                  for d in range(dims)])


def aggregate(similarities: Sequence[float], sizes: Sequence[int], top_k: int) -> float:
    """Size-weighted mean of the ``top_k`` best chunk similarities (ties broken by position)."""
    ranked = sorted(range(len(similarities)), key=lambda i: (-similarities[i], i))[: max(1, top_k)]
    weight = sum(max(1, sizes[i]) for i in ranked)
    return math.fsum(similarities[i] * max(1, sizes[i]) for i in ranked) / weight


async def _embed(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    vectors = await embedder.embed(texts)
    if len(vectors) != len(texts):
        raise DetectiveError(DETECTIVE, f"the embedding model returned {len(vectors)} vectors for {len(texts)} texts")
    dims = {len(v) for v in vectors}
    if len(dims) != 1 or 0 in dims:
        raise DetectiveError(DETECTIVE, f"the embedding model returned vectors of sizes {sorted(dims)}")
    return [_unit(v) for v in vectors]


# --- the measurement ---------------------------------------------------------------------------------------


def _not_measured(reason: str, sources: tuple[str, ...] = (), model: str | None = None) -> DetectiveReport:
    result = SemanticResult(measured=False, reason=reason, intent_sources=sources, model=model)
    return DetectiveReport(
        detective=DETECTIVE,
        semantic=result,
        evidence=(Evidence(id=f"{DETECTIVE}.not-measured", detective=DETECTIVE, kind="semantic-not-measured",
                           summary=f"Rationale not measured: {reason}", severity="low",
                           facts={"reason": reason, "intent_sources": list(sources)}),),
    )


def describe_sources(sources: Sequence[str]) -> str:
    names = {"title": "title", "body": "body", "commit-messages": "commit messages"}
    issues = sum(1 for s in sources if s.startswith("linked-issue-"))
    words = [names[s] for s in sources if s in names]
    if issues:
        words.append(f"{issues} linked issue{'s' if issues > 1 else ''}")
    return " + ".join(words) if words else "nothing"


async def measure_rationale(case: Case, rubric: Rubric, embedder: Embedder) -> DetectiveReport:
    """Measure R for ``case``: evidence of kind ``semantic`` always, ``intent-mismatch`` below the threshold."""
    rules = rubric.rationale
    intent = build_intent(case)
    if not intent.text:
        return _not_measured("the change states no intent (no title, body, linked issue or commit message)",
                             model=embedder.model_id)
    code = build_code_chunks(case, rubric, intent.text)
    if not code.chunks:
        reason = "the change adds no code or text to compare with its intent"
        if code.echo_words_removed:
            reason = "everything the change adds repeats its own description"
        return _not_measured(reason, intent.sources, embedder.model_id)

    intent_text, _ = limit_words(intent.text, rules.max_intent_words)
    windows = intent_windows(intent_text, rules.window_words)
    texts = [text for text, _ in windows] + [chunk.text for chunk in code.chunks]
    vectors = await _embed(embedder, texts)
    intent_vector = mean_vector(vectors[: len(windows)], [size for _, size in windows])
    similarities = [_dot(v, intent_vector) for v in vectors[len(windows):]]
    sizes = [chunk.size for chunk in code.chunks]
    raw = aggregate(similarities, sizes, rules.top_k)
    raw_stored = round_score(raw)
    score = round_score(cis.rationale_score(rubric, raw_stored))

    result = SemanticResult(measured=True, raw_similarity=raw_stored, score=score, model=embedder.model_id,
                            intent_sources=intent.sources, chunks=len(code.chunks))
    return DetectiveReport(detective=DETECTIVE, semantic=result,
                           evidence=tuple(_evidence(case, rubric, intent, code, similarities, raw_stored, score,
                                                    embedder.model_id)))


def _evidence(case: Case, rubric: Rubric, intent: Intent, code: CodeText, similarities: Sequence[float],
              raw: float, score: float, model: str) -> list[Evidence]:
    rules = rubric.rationale
    ranked = sorted(range(len(similarities)), key=lambda i: (-similarities[i], i))
    best = [{"location": code.chunks[i].location, "label": code.chunks[i].label, "words": code.chunks[i].size,
             "similarity": round_score(similarities[i])} for i in ranked[: rules.top_k]]
    source_words = describe_sources(intent.sources)
    evidence = [Evidence(
        id=f"{DETECTIVE}.rationale", detective=DETECTIVE, kind="semantic",
        summary=(f"R = {score:.2f} (raw cosine {raw:.4f}) from {source_words} against {len(code.chunks)} code "
                 f"chunk{'s' if len(code.chunks) != 1 else ''} of {code.files} file{'s' if code.files != 1 else ''}"),
        facts={
            "raw_similarity": raw,
            "score": score,
            "model": model,
            "intent_sources": list(intent.sources),
            "chunks_embedded": len(code.chunks),
            "chunks_total": code.total_chunks,
            "aggregation": f"size-weighted mean of the top {rules.top_k} chunk cosines",
            "calibration": {"raw_low": rules.calibration.raw_low, "raw_high": rules.calibration.raw_high},
            "best_chunks": best,
            "intent_words": len(intent.text.split()),
            "intent_truncated_to": rules.max_intent_words if len(intent.text.split()) > rules.max_intent_words
            else None,
        },
    )]
    if intent.fallback_to_commits:
        evidence.append(Evidence(
            id=f"{DETECTIVE}.intent-fallback", detective=DETECTIVE, kind="semantic", severity="low",
            summary=("The PR body is empty: the intent was taken from "
                     f"{source_words}, a weaker statement of purpose than a description"),
            facts={"intent_sources": list(intent.sources), "commits": len(case.commits)},
        ))
    if code.total_chunks > len(code.chunks):
        evidence.append(Evidence(
            id=f"{DETECTIVE}.chunk-cap", detective=DETECTIVE, kind="semantic",
            summary=(f"The change has {code.total_chunks} code chunks; R used a deterministic sample of "
                     f"{len(code.chunks)} (the rubric's cap), chosen by content hash"),
            facts={"chunks_total": code.total_chunks, "chunks_embedded": len(code.chunks),
                   "max_chunks": rules.max_chunks},
        ))
    if code.echo_words_removed:
        evidence.append(Evidence(
            id=f"{DETECTIVE}.intent-echo", detective=DETECTIVE, kind="semantic", severity="low",
            summary=(f"{code.echo_words_removed} words of the added code repeat the PR's own description verbatim "
                     f"(runs of {rules.echo_ngram}+ words); they were left out of R"),
            facts={"words_removed": code.echo_words_removed, "echo_ngram": rules.echo_ngram},
        ))
    threshold = rubric.intent.threshold
    if score < threshold:
        penalty = cis.intent_penalty(rubric, score)
        evidence.append(Evidence(
            id=f"{DETECTIVE}.intent-mismatch", detective=DETECTIVE, kind="intent-mismatch",
            severity="high" if score < threshold / 2 else "medium",
            confidence=0.8 if intent.fallback_to_commits else 0.9,
            summary=(f"R = {score:.2f} is below the mismatch threshold {threshold:.2f}: the code does not read "
                     f"like the change its {source_words} describe; the CIS is multiplied by ×{penalty:.2f} "
                     f"(floor ×{rubric.intent.floor:.2f})"),
            facts={"score": score, "threshold": threshold, "floor": rubric.intent.floor,
                   "penalty": round_score(penalty)},
        ))
    return evidence
