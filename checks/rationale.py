"""Rationale Integrity (R): how close the changed code's meaning is to the change's stated intent.

Pure: texts in, vectors from an :class:`~checks.protocols.Embedder`, a score out. Every constant comes from the
rubric's ``rationale`` section.

How R is computed
-----------------
1. **Intent text** — the PR title, the body's prose and the linked issues the caller provides, in that order of
   trust. The body's fenced code blocks, ``<details>`` sections and HTML comments are not intent, nor are lines
   copied from the diff (runs of ``echo_ngram`` words the change adds). Commit messages are never intent: they
   are the change describing itself. Fewer than ``intent.min_intent_words`` meaningful words: R is not measured
   (an honest "Fix #387" says too little to compare, and is not penalised for it). Long intent is cut into word
   windows whose vectors are averaged (weighted by words) into one intent vector.
2. **Code text** — only what the diff adds, never whole files. Python files are grouped by the innermost
   function or class enclosing each added line (its qualified name and docstring travel with the chunk as
   context); other files, and module-level Python lines, form one stream per file. Identifiers are split
   (``snake_case``/``camelCase`` → words), comments and docstrings are kept, syntax noise is dropped.
3. **Echo stripping** — any run of ``echo_ngram`` consecutive words that also occurs in the intent is
   removed from the code text first: a PR cannot raise R by pasting its own description into a comment.
4. **Chunks** — each group is cut into windows of at most ``window_words`` words (well under MiniLM's 256
   word-piece limit, so nothing is silently truncated). Product code and docs come first; test files count only
   when the change has nothing else; data, lock, vendored and generated files are left out; every file left out
   is named in the evidence. Beyond ``max_chunks`` the chunks sharing most words with the intent are kept (never a
   random sample that could drop the one relevant chunk), and a ``low`` finding says how many of how many R read;
   an intent cut at ``max_intent_words`` is reported the same way. A change adding fewer than
   ``intent.min_change_words`` words has too little meaning to measure: R is not measured.
5. **Aggregation** — every chunk is embedded in one batch; its cosine with the intent vector is computed;
   R_raw is the mean of the ``top_k`` best chunk similarities weighted by chunk size (in words). One relevant
   function in a large PR therefore counts fully, while a single tiny chunk cannot dominate.
6. **Calibration** — R = clamp((R_raw − raw_low) / (raw_high − raw_low)), both stored rounded to 4 decimals.
7. **Mismatch** — R alone never decides a penalty. *Anchors* are the code the intent names (backticked text,
   ``snake_case``, ``CamelCase``, ``dotted.names``, ``calls()``): when the change touches one of them (its added
   or removed lines, hunk headers or paths), the description demonstrably refers to this change and no intent
   penalty applies. When it names code and touches none of it, R below ``intent.anchored_threshold`` is a
   mismatch; when it names none, R below ``intent.threshold``. The threshold that applies travels with the
   result (``SemanticResult.penalty_threshold``) to the Chief Justice.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import heapq
import io
import math
import re
import sys
import tokenize
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from checks import cis, pyast
from checks.collector import collector_paused
from checks.diff import DiffError, parse_diff
from checks.errors import DetectiveError
from checks.languages import javascript, javascript_syntax
from checks.linguist import named_languages, unanalysed_code
from checks.models import Case, ChangedFile, DetectiveReport, Evidence, SemanticResult, round_score
from checks.protocols import Embedder
from checks.rationale_vectors import aggregate, record_vectors
from checks.testpaths import is_test_path
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
FENCE_RE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
DETAILS_OPEN_RE = re.compile(r"<details\b", re.IGNORECASE)
DETAILS_CLOSE_RE = re.compile(r"</details\s*>", re.IGNORECASE)
INLINE_CODE_RE = re.compile(r"`([^`\n]{1,200})`")
ACRONYM_RE = re.compile(r"[A-Z][A-Z0-9]{1,7}")
CODE_LINE_RE = re.compile(r"^\s{4,}\S|[;{}]\s*$|:\s*$|\b(def|class|return|import|lambda|async|await)\b"
                          r"|[\w\]\)]\s*[=(\[]")
ANCHOR_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")
# files whose added text says nothing about what a change is for
DATA_SUFFIXES = (".json", ".csv", ".tsv", ".xml", ".svg", ".lock", ".min.js", ".map", ".pb", ".dat", ".bin",
                 ".ipynb", ".pickle", ".parquet")
LOCK_FILES = frozenset({"package-lock.json", "yarn.lock", "poetry.lock", "pipfile.lock", "uv.lock", "pdm.lock",
                        "cargo.lock", "gemfile.lock", "composer.lock", "go.sum"})
VENDORED_DIRS = frozenset({"vendor", "vendored", "_vendor", "third_party", "thirdparty", "node_modules",
                           "site-packages", "dist", "build"})
GENERATED_RE = re.compile(r"(auto-?generated|generated by|do not edit|@generated)", re.IGNORECASE)


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


# What maintainers' tools and templates add to a PR's text that says nothing about the change: the PR number a
# squash merge appends (``(#123)``), issue references (``Fixes #12``, ``gh-12``), commit trailers, the
# ``Merge pull request #N from owner/branch`` line, checklist items of a PR template and its bare headings.
PR_NUMBER_RE = re.compile(r"\s*\((?:(?:#|gh-|GH-)\d{1,7}(?:,\s*)?)+\)")
ISSUE_REF_RE = re.compile(
    r"\b(?:(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?|refs?|see|related(?: to)?|part of|follow[- ]up(?: to| of)?|"
    r"supersedes|replaces)\s*:?\s*)?(?:[\w.-]{1,100}/[\w.-]{1,100})?(?:#|gh-|GH-)\d{1,7}\b", re.IGNORECASE)
TRAILER_RE = re.compile(r"^\s*(?:co-authored-by|signed-off-by|reviewed-by|acked-by|tested-by|reported-by|"
                        r"suggested-by|helped-by|cc|change-id|closes|fixes|refs)\s*:", re.IGNORECASE)
MERGE_LINE_RE = re.compile(r"^\s*merge (?:pull request|branch|remote-tracking branch)\b", re.IGNORECASE)
CHECKLIST_RE = re.compile(r"^\s*(?:[-*+]\s*)?\[[ xX]\]")
TEMPLATE_HEADING_RE = re.compile(
    r"^\s*#{0,6}\s*(?:summary|description|changes|changelog|checklist|motivation|context|notes?|"
    r"pull request checklist|what does this pr do\??|related issues?|fixes|closes|test plan|testing)\s*:?\s*$",
    re.IGNORECASE)


def strip_boilerplate(text: str) -> str:
    """PR text without what tools and templates add (see ``PR_NUMBER_RE`` and below): lines that are trailers,
    merge lines, checklist items or bare template headings are dropped; PR numbers and issue references are cut
    out of the lines kept. Linear in the text (PR text is untrusted: every repeat is bounded)."""
    kept: list[str] = []
    for line in text.splitlines():
        if TRAILER_RE.match(line) or MERGE_LINE_RE.match(line) or CHECKLIST_RE.match(line) \
                or TEMPLATE_HEADING_RE.match(line):
            continue
        kept.append(ISSUE_REF_RE.sub(" ", PR_NUMBER_RE.sub(" ", line)))
    return "\n".join(kept)



def prose(text: str) -> str:
    """The prose of PR text: without fenced code blocks, ``<details>`` sections and HTML comments (line by line, in
    linear time: PR text is untrusted)."""
    text = HTML_COMMENT_RE.sub(" ", text)
    kept: list[str] = []
    fence: str | None = None
    details = 0
    for line in text.splitlines():
        opener = FENCE_RE.match(line)
        if fence is not None:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = None
            continue
        if opener:
            fence = opener.group(1)
            continue
        opened, closed = len(DETAILS_OPEN_RE.findall(line)), len(DETAILS_CLOSE_RE.findall(line))
        if details or opened:
            details = max(0, details + opened - closed)
            continue
        kept.append(line)
    return "\n".join(kept)


STDLIB = frozenset(sys.stdlib_module_names)
# Names any Python change may touch: they say nothing about *which* change a description refers to.
GENERIC_ANCHORS = frozenset(
    {name.lower() for name in dir(builtins)} | {name.lower() for name in sys.stdlib_module_names}
    | {"self", "cls", "args", "kwargs", "init", "main", "test", "tests", "setup", "readme", "changelog"})
HOST_SUFFIXES = frozenset({"com", "org", "net", "io", "dev", "edu", "gov", "info", "co", "uk", "de"})
GENERIC_ACRONYMS = frozenset({"API", "PR", "CI", "CD", "PEP", "RFC", "CVE",
                              "URL", "URI", "JSON", "HTTP", "HTTPS", "CLI", "UI", "OK", "ID",
                              "IO", "OS", "CPU", "SQL", "HTML", "CSS", "XML", "YAML", "TODO", "FAQ", "README", "MR"})


# Files most changes of a project touch (its docs index, changelog, packaging): naming one does not say which change.
GENERIC_FILE_STEMS = frozenset({"index", "readme", "changelog", "changes", "history", "news", "contributing",
                                "license", "authors", "conf", "setup", "pyproject", "makefile", "tox", "noxfile",
                                "conftest", "__init__", "requirements", "manifest", "docs"})


def specific(anchor: str) -> bool:
    """Whether an anchor can single out a change: not a builtin, a standard-library module, a dunder name, a
    generic acronym (``API``, ``PR``) or a file most changes touch (``index.rst``, ``setup.cfg``)."""
    if anchor in GENERIC_ACRONYMS:
        return False
    if ACRONYM_RE.fullmatch(anchor):  # ``TTY`` matches with its case: an acronym, not the module ``tty``
        return True
    bare = anchor.lower()
    file_stem = bare.rsplit("/", 1)[-1].split(".", 1)[0] if "." in bare else None
    return not (bare in GENERIC_ANCHORS or bare.split(".", 1)[0] in STDLIB or file_stem in GENERIC_FILE_STEMS
                or (bare.startswith("__") and bare.endswith("__")))


def library_attribute(anchor: str) -> bool:
    """Whether an anchor names an attribute of a standard-library module (``posixpath.join``,
    ``asyncio.iscoroutinefunction``): generic when the change touches it (any change may call ``os.path.join``),
    yet specific when it does not — a description naming it is about code that calls it."""
    parts = anchor.split(".")
    return (len(parts) > 1 and parts[0] in STDLIB and all(p.isidentifier() for p in parts)
            and not names_file(anchor))


def absent_attributes(anchors: Iterable[str], changed: str) -> tuple[str, ...]:
    """The standard-library attributes an intent names (:func:`library_attribute`) of which the change's text
    lacks a part: ``posixpath.join`` where the change never mentions ``posixpath``. One whose parts it holds
    (``from typing import Callable`` for ``typing.Callable``) is not absent."""
    return tuple(a for a in anchors if library_attribute(a)
                 and not all(touches(part, changed) for part in a.split(".")))


def intent_anchors(text: str) -> tuple[str, ...]:
    """The code an intent names: backticked text (whole, and its last dotted part), identifiers that look like code
    (``snake_case``, ``CamelCase``, ``dotted.names``, ``calls()``) in lower case, and acronyms (``YB``, ``FIPS``)
    kept in upper case, which match case-sensitively. URLs, host names and dunder names are not anchors; generic
    ones (builtins, standard-library modules, ``API``: not :func:`specific`) are, but touching one does not show
    that the description is about this change."""
    text = URL_RE.sub(" ", text)
    found: set[str] = set()
    for code in INLINE_CODE_RE.findall(text):
        whole = code.strip().removesuffix("()").lower()
        if 2 < len(whole) <= 80 and whole not in SYNTAX_WORDS:
            found.add(whole)
        for token in ANCHOR_RE.findall(code):
            name = token.removesuffix("()").rsplit(".", 1)[-1].lower()
            if len(name) > 2 and name not in SYNTAX_WORDS and "." not in code.strip():
                found.add(name)
    for token in ANCHOR_RE.findall(INLINE_CODE_RE.sub(" ", text)):
        name = token.removesuffix("()")
        last = name.rsplit(".", 1)[-1]
        if "." in name and last.lower() in HOST_SUFFIXES:  # a host name in prose (``github.com``), not code
            continue
        if ACRONYM_RE.fullmatch(last):
            found.add(last)
            continue
        looks_like_code = ("_" in last.strip("_") or last.startswith("_") or token.endswith("()")
                           or ("." in name and not name.replace(".", "").isdigit())
                           or (re.search(r"[a-z][A-Z]", last) is not None and len(last) > 3))
        if looks_like_code and len(last) > 2 and last.lower() not in SYNTAX_WORDS:
            found.add(last.lower())
            if "." in name and not specific(last):  # ``collections.abc``: the whole name is what is specific
                found.add(name.lower())
    return tuple(sorted(a for a in found if not (a.startswith("__") and a.endswith("__"))))


def touches(anchor: str, changed: str) -> bool:
    """Whether the change's text (:func:`change_text`, case kept) holds ``anchor`` as a whole name or a whole part
    of a ``camelCase``/``snake_case`` one (``com`` is not touched by ``compute``): acronyms with their case,
    everything else case-insensitively."""
    if len(anchor) < 2:
        return False
    if ACRONYM_RE.fullmatch(anchor):
        return re.search(rf"(?<![A-Za-z]){re.escape(anchor)}(?![A-Za-z])", changed) is not None
    for match in re.finditer(re.escape(anchor), changed, re.IGNORECASE):
        start, end = match.start(), match.end()
        before = changed[start - 1] if start else " "
        after = changed[end] if end < len(changed) else " "
        # a whole name, or a whole part of one: ``healthz`` in ``handleHealthz`` or ``handle_healthz``
        starts = not before.isalnum() or (before.islower() and changed[start].isupper())
        ends = not after.isalnum() or (after.isupper() and changed[end - 1].islower())
        if starts and ends:
            return True
    return False


def change_text(case: Case, scopes: ScopesByPath | None = None) -> str:
    """What the change touches: its paths, its added and removed lines, and the scopes it changes — for a Python
    file at head, every part of the qualified names of the functions and classes holding its added lines; for
    other hunks, git's hunk header up to its parameters (``def loads`` of ``def loads(s, *, parse_float)``). A
    parameter or a return type in a header is not what the change is in, and git's header names the line above
    the hunk's *context*, which may be the end of another function. ``scopes``: :func:`scopes_by_path` when the
    caller has parsed the change already."""
    scoped = _added_scope_names(case, scopes_by_path(case) if scopes is None else scopes)
    parts = [f.path for f in case.files]
    path: str | None = None
    header: str | None = None
    header_has_added = False

    def flush() -> None:
        if header is not None and not (path in scoped and header_has_added):
            parts.append(_hunk_scope(header))

    for line in case.diff.splitlines():
        if line.startswith("diff --git"):
            flush()
            header, path = None, None
            parts.append(line)
        elif line.startswith("+++ "):
            path = line[4:].removeprefix("b/")
        elif line.startswith("---"):
            continue
        elif line.startswith("@@"):
            flush()
            header, header_has_added = line, False
        elif line.startswith(("+", "-")):
            parts.append(line)
            header_has_added = header_has_added or line.startswith("+")
    flush()
    parts.extend(name for names in scoped.values() for name in names)
    return "\n".join(parts)


def _hunk_scope(header: str) -> str:
    """``@@ -1,2 +1,3 @@ def loads(s, *, parse_float) -> dict:`` → ``def loads``: the scope git names, without its
    parameters or return type."""
    _, _, context = header.partition(" @@")
    return context.split("(", 1)[0]


def _added_scope_names(case: Case, scopes: ScopesByPath) -> dict[str, tuple[str, ...]]:
    """For each Python file at head that parses, the names of the functions and classes holding its added lines
    (``TOMLDecodeError.__init__`` gives both parts)."""
    names: dict[str, tuple[str, ...]] = {}
    for changed in case.files:
        file_scopes = scopes.get(changed.path)
        if file_scopes is None:
            continue
        held = innermost_scopes(file_scopes, changed.added_lines).values()
        names[changed.path] = tuple(sorted({part for scope in held for part in scope.qualname.split(".")}))
    return names


@dataclass(frozen=True)
class Intent:
    text: str
    sources: tuple[str, ...]
    anchors: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()  # what was not counted as intent, and why


def build_intent(case: Case, added_words: Sequence[str] = (), echo_ngram: int = 5) -> Intent:
    """The stated intent, from the title, the body's prose and the linked issues (never the commit messages).

    Lines of the body that repeat ``echo_ngram``-word runs of what the change adds (``added_words``) are dropped:
    code pasted into the description describes nothing."""
    parts: list[str] = []
    sources: list[str] = []
    dropped: list[str] = []
    code_ngrams = frozenset(tuple(added_words[i:i + echo_ngram]) for i in range(len(added_words) - echo_ngram + 1))

    def copied(line: str) -> bool:
        # code pasted into the body, not prose the code's comments repeat (that echo is stripped from the code)
        if not CODE_LINE_RE.search(line):
            return False
        words = code_words(line)
        if len(words) < echo_ngram or not code_ngrams:
            return False
        runs = sum(1 for i in range(len(words) - echo_ngram + 1) if tuple(words[i:i + echo_ngram]) in code_ngrams)
        return runs * 2 >= len(words) - echo_ngram + 1

    title_text = strip_boilerplate(case.title)
    title = clean_markdown(title_text)
    if title:
        parts.append(title)
        sources.append("title")
    body_prose = prose(case.body)
    if len(body_prose.split()) < len(case.body.split()):
        dropped.append("code blocks, <details> and HTML comments of the body")
    body_text = strip_boilerplate(body_prose)
    if len(body_text.split()) < len(body_prose.split()) or len(title_text.split()) < len(case.title.split()):
        dropped.append("PR and issue numbers, trailers, merge lines and template checklists")
    body_prose = body_text
    kept_lines = []
    for line in body_prose.splitlines():
        if copied(line):
            dropped.append("body lines copied from the diff")
            continue
        kept_lines.append(line)
    body = clean_markdown("\n".join(kept_lines))
    if body:
        parts.append(body)
        sources.append("body")
    anchor_text = "\n".join([title_text, *kept_lines])
    for number, issue in enumerate(case.linked_issues, start=1):
        issue_prose = prose(issue)
        cleaned = clean_markdown(issue_prose)
        if cleaned:
            parts.append(cleaned)
            sources.append(f"linked-issue-{number}")
            anchor_text += "\n" + issue_prose
    return Intent(text="\n".join(parts), sources=tuple(sources), anchors=intent_anchors(anchor_text),
                  dropped=tuple(dict.fromkeys(dropped)))


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


@dataclass(frozen=True)
class _Scope:
    qualname: str
    start: int
    end: int
    docstring: str | None


def python_scopes(source: str) -> tuple[_Scope, ...] | None:
    """Every function and class in ``source`` with its line span; None when it does not parse."""
    with collector_paused():
        scopes = _python_scopes(source)
    return None if scopes is None else tuple(scopes)


ScopesByPath = dict[str, tuple[_Scope, ...] | None]


def scopes_by_path(case: Case) -> ScopesByPath:
    """The scopes (:func:`python_scopes`; JavaScript's and TypeScript's from their syntax tree,
    :func:`checks.languages.javascript_syntax.scopes`) of every such file at head the change adds lines to, by path:
    read once per review, for the chunker and for what the change touches. None for a file that does not parse."""
    found: ScopesByPath = {f.path: python_scopes(f.content) for f in case.files
                           if f.path.endswith(PYTHON_SUFFIXES) and f.content is not None and f.added_lines}
    for f in case.files:
        if javascript.owns(f.path) and f.content is not None and f.added_lines:
            read = javascript_syntax.scopes(f.content, f.path)
            if read is not None:  # without the tree-sitter wheels: read as other languages' lines are
                found[f.path] = tuple(_Scope(name, start, end, doc) for name, start, end, doc in read)
    return found


def _python_scopes(source: str) -> list[_Scope] | None:
    try:
        tree = pyast.parse(source)
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


def innermost_scopes(scopes: Sequence[_Scope], lines: Iterable[int]) -> dict[int, _Scope]:
    """For each of ``lines`` held by a scope, the innermost one: the shortest span holding the line, the last in
    ``scopes`` on a tie. One sweep down the lines with a heap of the open scopes, so a file with F functions and L
    added lines costs O((F + L) log F), not F × L."""
    by_start = sorted(range(len(scopes)), key=lambda i: scopes[i].start)
    open_scopes: list[tuple[int, int]] = []  # (span, -index): the heap's top is the innermost candidate
    found: dict[int, _Scope] = {}
    following = 0
    for line in sorted(set(lines)):
        while following < len(by_start) and scopes[by_start[following]].start <= line:
            index = by_start[following]
            heapq.heappush(open_scopes, (scopes[index].end - scopes[index].start, -index))
            following += 1
        # a scope that ended before this line has ended for every later line too
        while open_scopes and scopes[-open_scopes[0][1]].end < line:
            heapq.heappop(open_scopes)
        if open_scopes:
            found[line] = scopes[-open_scopes[0][1]]
    return found


def new_words(case: Case) -> int:
    """How many meaningful words the change adds that the lines it removes did not hold (per file, counted with
    multiplicity): a typo fix rewrites whole lines but adds a word or two."""
    wanted = {changed.path for changed in case.files}
    total = 0
    try:
        deltas = parse_diff(case.diff)
    except DiffError:
        return 10**9  # unknown: never a reason to skip R
    removed: dict[str, Counter[str]] = {}
    current: str | None = None
    for line in case.diff.splitlines():  # the removed side, per file (the parsed diff keeps the added side)
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("-") and not line.startswith("--- ") and current is not None:
            removed.setdefault(current, Counter()).update(code_words(line[1:]))
    for delta in deltas:
        if delta.path not in wanted or delta.is_binary:
            continue
        added = Counter(w for text in delta.added_text for w in code_words(text))
        total += sum((added - removed.get(delta.path, Counter())).values())
    return total


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


def _groups_for_file(path: str, lines: Sequence[tuple[int, str]], scopes: tuple[_Scope, ...] | None,
                     min_words: int, *, docstrings: bool = True) -> list[_Group]:
    rest = _Group(label=path, context=[], lines=[])
    if not scopes:
        rest.lines = [(n, code_words(text)) for n, text in lines]
        return [rest] if rest.size() else []
    by_scope: dict[str, _Group] = {}
    added_numbers = {n for n, _ in lines}
    innermost = innermost_scopes(scopes, added_numbers)
    for number, text in lines:
        scope = innermost.get(number)
        if scope is None:
            rest.lines.append((number, code_words(text)))
            continue
        group = by_scope.get(scope.qualname)
        if group is None:
            context = code_words(scope.qualname.replace(".", " "))
            # The docstring explains the function even when the diff only touches its body.
            if docstrings and scope.docstring and scope.start not in added_numbers:
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
    left_out: tuple[tuple[str, str], ...] = ()  # (path, why its text is not compared with the intent)
    words: int = 0


def left_out_reason(path: str, changed: ChangedFile | None, lines: Sequence[tuple[int, str]]) -> str | None:
    """Why a file's added text says nothing about the change's purpose, or None when it does."""
    pure = PurePosixPath(path.lower())
    if pure.name in LOCK_FILES or pure.name.endswith(DATA_SUFFIXES):
        return "data or lock file"
    if any(part in VENDORED_DIRS for part in pure.parts[:-1]):
        return "vendored or built file"
    head = (changed.content or "")[:2000] if changed is not None else "\n".join(t for _, t in lines[:20])
    if GENERATED_RE.search(head):
        return "generated file"
    return None


LINGUIST_REASONS = {"generated": "generated file (linguist-generated in .gitattributes)",
                    "vendored": "vendored file (linguist-vendored in .gitattributes)"}
COMMENT_STARTS = ("#", "//", "/*", "*", "<!--", "--", ";")


def _python_prose(content: str) -> tuple[set[int], dict[int, int]]:
    """Docstring lines and comment columns of a Python source: ``(lines, {line: column})``."""
    doc_lines: set[int] = set()
    comments: dict[int, int] = {}
    with contextlib.suppress(SyntaxError, ValueError, RecursionError, MemoryError):
        with collector_paused():
            tree = pyast.parse(content)
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
                first = node.body[0]
                if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                        and isinstance(first.value.value, str) and first.end_lineno is not None):
                    doc_lines.update(range(first.lineno, first.end_lineno + 1))
    with contextlib.suppress(tokenize.TokenError, SyntaxError, ValueError):
        for token in tokenize.generate_tokens(io.StringIO(content).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.start[1]
    return doc_lines, comments


def without_prose(changed: ChangedFile | None, path: str,
                  lines: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    """The added lines without what an author writes beside the code: comments and docstrings (Python, read
    with its tokenizer), or lines that start like a comment (other languages)."""
    if changed is not None and changed.content is not None and path.endswith(PYTHON_SUFFIXES):
        doc_lines, comments = _python_prose(changed.content)
        kept = [(n, text[:comments[n]] if n in comments else text) for n, text in lines if n not in doc_lines]
    else:
        kept = [(n, text) for n, text in lines if not text.lstrip().startswith(COMMENT_STARTS)]
    return [(n, text) for n, text in kept if text.strip()]


def build_code_chunks(case: Case, rubric: Rubric, intent_text: str, *, code_only: bool = False,
                      added: dict[str, list[tuple[int, str]]] | None = None,
                      scopes: ScopesByPath | None = None) -> CodeText:
    """Chunk the added code (echo-stripped, windowed), product code first, relevance-ranked under the cap.
    ``code_only``: without comments and docstrings (:func:`without_prose`); ``added`` and ``scopes``: the change's
    added lines and syntax scopes when the caller has read them already (:func:`added_lines_by_path`,
    :func:`scopes_by_path`)."""
    rules = rubric.rationale
    n = rules.echo_ngram
    # The same word filter on both sides, so a comment that pastes the description matches word for word.
    intent_tokens = code_words(intent_text)
    ngrams = frozenset(tuple(intent_tokens[i:i + n]) for i in range(len(intent_tokens) - n + 1))
    files = {f.path: f for f in case.files}
    product: list[Chunk] = []
    tests: list[Chunk] = []
    left_out: list[tuple[str, str]] = []
    removed = 0
    added = added_lines_by_path(case) if added is None else added
    scopes = scopes_by_path(case) if scopes is None else scopes
    if code_only:
        added = {path: without_prose(files.get(path), path, lines) for path, lines in added.items()}
    for path in sorted(added):
        changed = files.get(path)
        if changed is not None and (changed.is_binary or changed.is_symlink):
            continue
        reason = LINGUIST_REASONS.get(case.linguist.get(path, "")) or left_out_reason(path, changed, added[path])
        if reason is not None:
            left_out.append((path, reason))
            continue
        # The path names the area of the change (``shop/shipping``); its extension says nothing about intent.
        header = code_words(str(PurePosixPath(path).with_suffix("")).replace("/", " "))
        target = tests if is_test_path(path) else product
        if not added[path]:
            continue
        for group in _groups_for_file(path, added[path], scopes.get(path), rules.min_chunk_words,
                                      docstrings=not code_only):
            removed += strip_echo(group, ngrams, n)
            target.extend(_window(group, path, header + group.context, rules.window_words))
    if product:
        chunks = product
        left_out.extend((path, "test file (the change has product code)") for path in sorted({c.path for c in tests}))
    else:
        chunks = tests
    total = len(chunks)
    if total > rules.max_chunks:
        # the chunks sharing most words with the intent, never a sample that could drop the relevant one
        wanted = set(intent_tokens)
        ranked = sorted(range(total), key=lambda i: (-len(wanted.intersection(chunks[i].words)), i))
        keep = set(ranked[: rules.max_chunks])
        chunks = [c for i, c in enumerate(chunks) if i in keep]
    return CodeText(chunks=tuple(chunks), total_chunks=total, echo_words_removed=removed, files=len(added),
                    left_out=tuple(left_out), words=sum(c.size for c in chunks))


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


def title_mismatch(case: Case, intent: Intent, touched: str, found: Sequence[str], score: float,
                   rubric: Rubric) -> Evidence | None:
    """A title that names code the change does not touch, over a body that does describe the change (it names
    code the change touches, or R clears the plain threshold): the title is checked on its own. Evidence for
    the reader, not a penalty: the body is what R measured."""
    if "body" not in intent.sources:
        return None
    named = intent_anchors(case.title)
    if not named or any(touches(a, touched) for a in named):
        return None
    body_named = [a for a in found if a not in named and specific(a)]
    if not body_named and score < rubric.intent.threshold:
        return None
    return Evidence(
        id=f"{DETECTIVE}.title-mismatch", detective=DETECTIVE, kind="title-mismatch", severity="medium",
        summary=(f"The title names {', '.join(f'`{a}`' for a in named[:5])}, which the change does not touch, "
                 "while the description's body matches the change: the title does not say what the PR does"),
        facts={"title_anchors": list(named), "body_anchors_touched": body_named})


# English function words and the words every PR uses for its own making ("add", "fix", "handle", "implement the
# fix", "document the test", "add a failing test"): they say nothing about what a description refers to, so they
# neither show nor refute that the change holds what it describes.
_DESCRIPTION_NOISE = """a an the and or but if of to in on for with by from at as is are was were be been being this
    that these those it its into onto over under when while where which who whom what why how not no yes can could
    should would will may might must do does did done has have had also more most some any all each other than then
    there
    here so such only just very too via per use used using add added adds fix fixed fixes fixing make makes made allow
    allows support supports handle handles new now instead after before test tests testing pr issue issues change
    changes changed update updates updated remove removed work works working small minor improve improves improved
    improvement improvements various misc miscellaneous tweak tweaks few several stuff things implement implements
    implemented implementing implementation document documents documented documenting fail fails failed failing
    pass passes passing bug bugs feature features"""
DESCRIPTION_NOISE = frozenset(_DESCRIPTION_NOISE.split())
STEM = 5  # words are compared by their stem's first five letters: "parse", "parsing" and "parsed" are one word here
STEM_SUFFIXES = ("ing", "ed", "es", "s", "e")


def stem(word: str) -> str:
    """A crude stem: one common inflection cut (at least three letters kept), then the first ``STEM`` letters."""
    for suffix in STEM_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:STEM]


@dataclass(frozen=True)
class Familiarity:
    """How much of what a description talks about the change contains: ``described`` content words of the
    intent, ``unfamiliar`` the ones found nowhere in the change (its paths, lines and scopes)."""
    described: int
    unfamiliar: tuple[str, ...]

    @property
    def familiar_share(self) -> float:
        return 1.0 - len(self.unfamiliar) / self.described if self.described else 1.0


def familiarity(intent_text: str, touched: str) -> Familiarity:
    """The content words of ``intent_text`` (no function words, no common PR verbs, three letters or more) and
    those the change's text (:func:`change_text`) does not hold, compared by :func:`stem`."""
    described = sorted({w for w in code_words(intent_text) if len(w) > 2 and w not in DESCRIPTION_NOISE})
    present = {stem(w) for w in code_words(touched)}
    return Familiarity(len(described), tuple(w for w in described if stem(w) not in present))


def familiar_text(case: Case, added: dict[str, list[tuple[int, str]]], scopes: ScopesByPath) -> str:
    """What a description's words are looked for in: the change's paths, the scopes its added lines are in, its
    removed lines and its added lines *without* comments and docstrings (:func:`without_prose`). The author's
    comments are not evidence that the code does what the description says: a change dressed in comments that
    repeat its description's words stays unfamiliar."""
    files = {f.path: f for f in case.files}
    parts = [f.path for f in case.files]
    parts.extend(name for names in _added_scope_names(case, scopes).values() for name in names)
    parts.extend(line[1:] for line in case.diff.splitlines() if line.startswith("-") and not line.startswith("---"))
    for path, lines in added.items():
        parts.extend(text for _, text in without_prose(files.get(path), path, lines))
    return "\n".join(parts)


def names_file(anchor: str) -> bool:
    """Whether an anchor names a file (``README``, ``CHANGES.rst``, ``docs/index.rst``): a description naming a
    file the change does not touch is not about this change, even when the file is one most changes touch."""
    bare = anchor.lower().rsplit("/", 1)[-1]
    return bare.split(".", 1)[0] in GENERIC_FILE_STEMS or bool(re.search(r"\.(rst|md|txt|cfg|toml|ini|py)$", bare))


def change_kind(rubric: Rubric, title: str) -> str | None:
    """The kind of change a title declares (``refactor``, ``dependency``, ``typo``…: the rubric's
    ``intent.exempt_kinds``), matched on the title's whole words without PR numbers and issue references; None
    when it declares none of them."""
    words = " ".join(code_words(strip_boilerplate(title).replace("-", " ")))
    padded = f" {words} "
    for kind, phrases in sorted(rubric.intent.exempt_kinds.items()):
        if any(f" {' '.join(code_words(phrase))} " in padded for phrase in phrases):
            return kind
    return None


# What a change of each declared kind touches (``kind_fits``): the files that declare dependencies, lint and type
# checking, the test runs; and the words of changed lines that a compatibility change is about.
DEPENDENCY_FILES = frozenset({"pyproject.toml", "setup.py", "setup.cfg", "pipfile", "pipfile.lock", "poetry.lock",
                              "uv.lock", "pdm.lock", "tox.ini", "noxfile.py", ".pre-commit-config.yaml",
                              "environment.yml", "environment.yaml", "dependabot.yml"})
DEPENDENCY_RE = re.compile(r"(^|/)(requirements|constraints)[^/]*\.(txt|in)$|(^|/)requirements/")
STYLE_FILES = frozenset({"pyproject.toml", "setup.cfg", "tox.ini", ".pre-commit-config.yaml", ".flake8", "ruff.toml",
                         ".ruff.toml", "mypy.ini", ".mypy.ini", ".pylintrc", "pylintrc", ".editorconfig", ".isort.cfg",
                         "py.typed"})
RUN_FILES = frozenset({"tox.ini", "noxfile.py", "conftest.py", "pytest.ini", ".coveragerc", "codecov.yml",
                       ".codecov.yml", "azure-pipelines.yml", ".travis.yml", "appveyor.yml", ".gitlab-ci.yml"})
RUN_DIRS = (".github/workflows/", ".circleci/", ".azure-pipelines/", "ci/")
COMPATIBILITY_RE = re.compile(r"version_info|python_requires|requires-python|Programming Language :: Python|"
                              r"\bPY\d|\bpy3\d|python3?\.?\d|warn|deprecat|removed in|pragma: no cover",
                              re.IGNORECASE)
TEST_MARKER_RE = re.compile(r"xfail|skipif|\bskip\b|flaky|timeout|rerun", re.IGNORECASE)
REWRITE_SHARE = 0.5  # a rewrite (a move, a rename, a reformat, a typo fix) takes out at least half of what it puts in
DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc")


@dataclass(frozen=True)
class ChangeShape:
    """What a change is made of, in meaningful words (:func:`code_words`): added to product files (not tests) and
    removed from them, added as prose (documentation files, comments and docstrings) and added to tests; the
    paths it touches; its changed lines."""
    product_added: int
    product_removed: int
    prose_added: int
    test_added: int
    paths: tuple[str, ...]
    changed_lines: str


def change_shape(case: Case, added: dict[str, list[tuple[int, str]]]) -> ChangeShape:
    files = {f.path: f for f in case.files}
    product = prose_words = tests = 0
    for path, lines in added.items():
        words = sum(len(code_words(text)) for _, text in lines)
        if is_test_path(path):
            tests += words
            continue
        product += words
        if path.lower().endswith(DOC_SUFFIXES):
            prose_words += words
        else:
            bare = sum(len(code_words(text)) for _, text in without_prose(files.get(path), path, lines))
            prose_words += max(0, words - bare)
    removed = 0
    current: str | None = None
    changed: list[str] = []
    for line in case.diff.splitlines():
        if line.startswith("--- "):  # the removed side's path (a deleted file's new side is /dev/null)
            current = line[6:] if line.startswith("--- a/") else None
        elif line.startswith("+++ "):
            continue
        elif line.startswith(("+", "-")):
            changed.append(line[1:])
            if line.startswith("-") and current is not None and not is_test_path(current):
                removed += len(code_words(line[1:]))
    return ChangeShape(product, removed, prose_words, tests, tuple(f.path for f in case.files), "\n".join(changed))


def _touches_file(paths: Sequence[str], names: frozenset[str], dirs: tuple[str, ...] = (),
                  pattern: re.Pattern[str] | None = None) -> str | None:
    for path in paths:
        lower = path.lower()
        if lower.rsplit("/", 1)[-1] in names or lower.startswith(dirs) or (pattern and pattern.search(lower)):
            return path
    return None


def kind_fits(kind: str, shape: ChangeShape) -> str | None:
    """What shows that the change is of the ``kind`` its title declares, in words (``touches setup.cfg``), or None
    when nothing does: a title may declare a bump, a reformat or a deflake over a change that is none of them.

    - refactor, typo: a rewrite, the change takes out of product code at least ``REWRITE_SHARE`` of what it puts
      in (a move, a rename, a spelling fix);
    - dependency: it touches a file that declares dependencies (``pyproject.toml``, ``requirements*.txt``…);
    - style: it touches a lint or type-checking configuration, or it is a rewrite (a reformat);
    - compatibility: it touches a dependency or CI file, its changed lines speak of versions, warnings or
      deprecations, or it is a rewrite (deprecated calls replaced);
    - documentation: at least half of what it adds to product files is prose (docs, comments, docstrings);
    - test suite: at least half of what it adds is tests, or it touches how tests run (CI, ``tox.ini``,
      ``conftest.py``), or its changed lines mark tests (``xfail``, ``skipif``, ``flaky``)."""
    rewrite = shape.product_removed >= REWRITE_SHARE * shape.product_added
    rewrite_said = (f"a rewrite ({shape.product_removed} words of product code taken out for "
                    f"{shape.product_added} put in)")
    if kind in ("refactor", "typo"):
        return rewrite_said if rewrite else None
    if kind == "dependency":
        path = _touches_file(shape.paths, DEPENDENCY_FILES, pattern=DEPENDENCY_RE)
        return f"touches {path}" if path else None
    if kind == "style":
        path = _touches_file(shape.paths, STYLE_FILES)
        return f"touches {path}" if path else rewrite_said if rewrite else None
    if kind == "compatibility":
        path = _touches_file(shape.paths, DEPENDENCY_FILES | RUN_FILES, RUN_DIRS, DEPENDENCY_RE)
        if path:
            return f"touches {path}"
        match = COMPATIBILITY_RE.search(shape.changed_lines)
        return f"changes lines on `{match.group(0)}`" if match else rewrite_said if rewrite else None
    if kind == "documentation":
        enough = shape.product_added > 0 and shape.prose_added * 2 >= shape.product_added
        return f"adds mostly prose ({shape.prose_added} of {shape.product_added} words)" if enough else None
    if kind == "test suite":
        if shape.test_added * 2 >= shape.test_added + shape.product_added and shape.test_added:
            return f"adds mostly tests ({shape.test_added} of {shape.test_added + shape.product_added} words)"
        path = _touches_file(shape.paths, RUN_FILES, RUN_DIRS)
        if path:
            return f"touches {path}"
        match = TEST_MARKER_RE.search(shape.changed_lines)
        return f"changes lines on `{match.group(0)}`" if match else None
    return "a kind this rule does not check"


# What would show each kind (said when nothing does)
KIND_SHOWN_BY = {"refactor": "a rewrite", "typo": "a rewrite", "dependency": "a file declaring dependencies",
                 "style": "a lint configuration or a rewrite",
                 "compatibility": "a dependency or CI file, lines on versions or deprecations, or a rewrite",
                 "documentation": "mostly prose", "test suite": "mostly tests, a CI file or test markers"}


def penalty_threshold(rubric: Rubric, anchors: Sequence[str], found: Sequence[str], kind: str | None = None,
                      known: Familiarity | None = None, fits: str | None = None,
                      absent: Sequence[str] = ()) -> float | None:
    """Under which R the intent penalty applies (None: never). The penalty needs evidence that the description
    is about something else, never a low R alone (a short honest title reads little like any code):

    - a specific anchor the change touches shows the description is about this change: no penalty;
    - naming specific code the change does not touch, a file it does not touch (``README``), or a standard-library
      attribute whose module or name the change never mentions (``absent``, :func:`absent_attributes`):
      ``intent.anchored_threshold``;
    - a title declaring a kind of change whose description need not read like its code (``kind``,
      :func:`change_kind`: a refactor, a rename, a bump, a typo fix) over a change that shows that kind
      (``fits``, :func:`kind_fits`: a bump touches a file declaring dependencies): no penalty; a kind the change
      does not show exempts nothing, and the rules below decide;
    - a description whose words the change mostly lacks (``known``: at most ``intent.familiar_share`` of its
      content words found in the change, and at least ``intent.min_unfamiliar_words`` missing — or none found and
      at least ``intent.min_unfamiliar_words_none_familiar`` missing): ``intent.threshold``;
    - otherwise (the change holds most of what the description talks about): no penalty."""
    if any(specific(a) for a in found):
        return None
    if any(specific(a) or (names_file(a) and a not in found) or a in absent for a in anchors):
        return rubric.intent.anchored_threshold
    if kind is not None and fits is not None:
        return None
    if known is not None and known.described and (
            (known.familiar_share <= rubric.intent.familiar_share
             and len(known.unfamiliar) >= rubric.intent.min_unfamiliar_words)
            or (len(known.unfamiliar) == known.described
                and len(known.unfamiliar) >= rubric.intent.min_unfamiliar_words_none_familiar)):
        return rubric.intent.threshold
    return None


def describe_sources(sources: Sequence[str]) -> str:
    names = {"title": "title", "body": "body", "commit-messages": "commit messages"}
    issues = sum(1 for s in sources if s.startswith("linked-issue-"))
    words = [names[s] for s in sources if s in names]
    if issues:
        words.append(f"{issues} linked issue{'s' if issues > 1 else ''}")
    return " + ".join(words) if words else "nothing"


async def measure_rationale(case: Case, rubric: Rubric, embedder: Embedder) -> DetectiveReport:
    """Measure R for ``case``: evidence of kind ``semantic`` always, ``intent-mismatch`` when the mismatch is
    strong (see the module's step 7)."""
    rules = rubric.rationale
    added = added_lines_by_path(case)
    added_words = [w for lines in added.values() for _, text in lines for w in code_words(text)]
    intent = build_intent(case, added_words, rules.echo_ngram)
    intent_words = len(code_words(intent.text))
    if intent_words < rubric.intent.min_intent_words:
        said = f"{intent_words} meaningful word{'s' if intent_words != 1 else ''}" if intent.text else "nothing"
        return _not_measured(f"the title and description say too little to compare with the code ({said}; at "
                             f"least {rubric.intent.min_intent_words} needed, and commit messages do not count)",
                             intent.sources, embedder.model_id)
    scopes = scopes_by_path(case)
    code = build_code_chunks(case, rubric, intent.text, added=added, scopes=scopes)
    if not code.chunks:
        reason = "the change adds no code or text to compare with its intent"
        if code.echo_words_removed:
            reason = "everything the change adds repeats its own description"
        elif code.left_out:
            reason = "the change only adds " + ", ".join(sorted({why for _, why in code.left_out}))
        return _not_measured(reason, intent.sources, embedder.model_id)
    rewritten = new_words(case)
    if code.words >= rubric.intent.min_change_words and rewritten < rubric.intent.min_change_words:
        return _not_measured(f"the change rewrites {rewritten} meaningful word{'s' if rewritten != 1 else ''} of "
                             f"the lines it touches (a typo-sized edit), too few to carry a meaning to compare (at "
                             f"least {rubric.intent.min_change_words})", intent.sources, embedder.model_id)
    if code.words < rubric.intent.min_change_words:
        return _not_measured(f"the change adds {code.words} meaningful words, too few to carry a meaning to compare "
                             f"(at least {rubric.intent.min_change_words})", intent.sources, embedder.model_id)

    intent_text, _ = limit_words(intent.text, rules.max_intent_words)
    windows = intent_windows(intent_text, rules.window_words)
    texts = [text for text, _ in windows] + [chunk.text for chunk in code.chunks]
    vectors = await _embed(embedder, texts)
    intent_vector = mean_vector(vectors[: len(windows)], [size for _, size in windows])
    similarities = [_dot(v, intent_vector) for v in vectors[len(windows):]]
    sizes = [chunk.size for chunk in code.chunks]
    raw = aggregate(similarities, sizes, rules.top_k)
    recorded = record_vectors(intent_vector, vectors[len(windows):], sizes, [chunk.text for chunk in code.chunks],
                              top_k=rules.top_k, raw_low=rules.calibration.raw_low,
                              raw_high=rules.calibration.raw_high)
    raw_stored = round_score(raw)
    score = round_score(cis.rationale_score(rubric, raw_stored))
    touched = change_text(case, scopes)
    found = tuple(a for a in intent.anchors if touches(a, touched))
    kind = change_kind(rubric, case.title)
    fits = kind_fits(kind, change_shape(case, added)) if kind is not None else None
    known = familiarity(intent.text, familiar_text(case, added, scopes))
    unread = unreadable_code(case)
    threshold = None if unread else penalty_threshold(rubric, intent.anchors, found, kind, known, fits,
                                                      absent_attributes(intent.anchors, touched))
    prose_lift: tuple[float, float] | None = None
    if threshold is not None and score >= threshold:
        # Comments and docstrings are the author's words beside the code: they may explain it, but they must not
        # be what makes an unrelated change read like its description. Under the threshold on the code alone,
        # R is the code's.
        bare = build_code_chunks(case, rubric, intent.text, code_only=True, added=added, scopes=scopes)
        if bare.chunks and bare.words >= rubric.intent.min_change_words:
            bare_vectors = await _embed(embedder, [chunk.text for chunk in bare.chunks])
            bare_raw = round_score(aggregate([_dot(v, intent_vector) for v in bare_vectors],
                                             [chunk.size for chunk in bare.chunks], rules.top_k))
            bare_score = round_score(cis.rationale_score(rubric, bare_raw))
            if bare_score < threshold:
                prose_lift = (score, bare_score)
                raw_stored, score = bare_raw, bare_score
                recorded = record_vectors(intent_vector, bare_vectors, [chunk.size for chunk in bare.chunks],
                                          [chunk.text for chunk in bare.chunks], top_k=rules.top_k,
                                          raw_low=rules.calibration.raw_low, raw_high=rules.calibration.raw_high)

    result = SemanticResult(measured=True, raw_similarity=raw_stored, score=score, model=embedder.model_id,
                            intent_sources=intent.sources, chunks=len(code.chunks), anchors=intent.anchors,
                            anchors_found=found, penalty_threshold=threshold, vectors=recorded)
    evidence = _evidence(rubric, intent, code, similarities, result, kind, known, unread, fits)
    if (title := title_mismatch(case, intent, touched, found, score, rubric)) is not None:
        evidence.append(title)
    if prose_lift is not None:
        evidence.insert(1, Evidence(
            id=f"{DETECTIVE}.prose-lift", detective=DETECTIVE, kind="semantic", severity="medium",
            summary=(f"The change reads like its description only through its comments and docstrings: R = "
                     f"{prose_lift[0]:.2f} with them, {prose_lift[1]:.2f} on the code alone, which is what R keeps "
                     f"(under the mismatch threshold {threshold:.2f})"),
            facts={"with_prose": prose_lift[0], "code_only": prose_lift[1], "threshold": threshold}))
    return DetectiveReport(detective=DETECTIVE, semantic=result, evidence=tuple(evidence))


def unreadable_code(case: Case) -> str | None:
    """``Go (2 files)`` when the change's code is all in languages LogoMesh does not analyse (no Python file left
    at head, some JavaScript, Go…: :func:`checks.linguist.unanalysed_code`), else None. R still reads such a
    change's words, but no intent penalty is computed from code LogoMesh cannot parse."""
    present = [f.path for f in case.files if f.status != "removed"]
    foreign = unanalysed_code(present)
    if not foreign or any(path.endswith(PYTHON_SUFFIXES) for path in present):
        return None
    return named_languages(foreign)


def _percent(part: int, whole: int) -> str:
    """``1.2 %``; a share that rounds to 0.0 still reads as more than nothing."""
    share = 100.0 * part / whole
    return f"{share:.1f} %" if share >= 0.05 else "< 0.1 %"


def _chunk_fact(chunk: Chunk, similarity: float) -> dict[str, object]:
    return {"location": chunk.location, "label": chunk.label, "words": chunk.size,
            "similarity": round_score(similarity)}


def _evidence(rubric: Rubric, intent: Intent, code: CodeText, similarities: Sequence[float],
              result: SemanticResult, kind: str | None = None,
              known: Familiarity | None = None, unread: str | None = None,
              fits: str | None = None) -> list[Evidence]:
    rules = rubric.rationale
    score = result.score or 0.0
    ranked = sorted(range(len(similarities)), key=lambda i: (-similarities[i], i))
    best = [_chunk_fact(code.chunks[i], similarities[i]) for i in ranked[: rules.top_k]]
    worst = [_chunk_fact(code.chunks[i], similarities[i]) for i in ranked[::-1][: rules.top_k]]
    source_words = describe_sources(intent.sources)
    where = f"best: {best[0]['location']} ({best[0]['similarity']:.2f})" if best else ""
    evidence = [Evidence(
        id=f"{DETECTIVE}.rationale", detective=DETECTIVE, kind="semantic",
        summary=(f"R = {score:.2f} (raw cosine {result.raw_similarity:.4f}) from {source_words} against "
                 f"{len(code.chunks)} code chunk{'s' if len(code.chunks) != 1 else ''} of {code.files} "
                 f"file{'s' if code.files != 1 else ''}; {where}"),
        facts={
            "raw_similarity": result.raw_similarity,
            "score": score,
            "model": result.model,
            "intent_sources": list(intent.sources),
            "chunks_embedded": len(code.chunks),
            "chunks_total": code.total_chunks,
            "aggregation": f"size-weighted mean of the top {rules.top_k} chunk cosines",
            "calibration": {"raw_low": rules.calibration.raw_low, "raw_high": rules.calibration.raw_high},
            "best_chunks": best,
            "worst_chunks": worst,
            "anchors": list(result.anchors),
            "anchors_found": list(result.anchors_found),
            "left_out": [{"path": path, "why": why} for path, why in code.left_out[:50]],
            "intent_words": len(intent.text.split()),
            "intent_truncated_to": rules.max_intent_words if len(intent.text.split()) > rules.max_intent_words
            else None,
        },
    )]
    if intent.dropped:
        evidence.append(Evidence(
            id=f"{DETECTIVE}.intent-filtered", detective=DETECTIVE, kind="semantic",
            summary="Not counted as intent: " + "; ".join(intent.dropped),
            facts={"dropped": list(intent.dropped)},
        ))
    if code.total_chunks > len(code.chunks):
        # a cap changes what R measured: said as a finding (low), never as a mere note (info)
        read, total = len(code.chunks), code.total_chunks
        evidence.append(Evidence(
            id=f"{DETECTIVE}.chunk-cap", detective=DETECTIVE, kind="semantic", severity="low",
            summary=(f"R read {read:,} of {total:,} chunks ({_percent(read, total)}), ranked by relevance to the "
                     f"description: the {read} that share most words with the intent (the rubric's cap, "
                     f"rationale.max_chunks = {rules.max_chunks}); the other {total - read:,} were not compared"),
            facts={"chunks_total": total, "chunks_embedded": read, "share_read": round(read / total, 4),
                   "max_chunks": rules.max_chunks, "ranked_by": "words shared with the intent"},
        ))
    intent_words = len(intent.text.split())
    if intent_words > rules.max_intent_words:
        evidence.append(Evidence(
            id=f"{DETECTIVE}.intent-cap", detective=DETECTIVE, kind="semantic", severity="low",
            summary=(f"R read the first {rules.max_intent_words:,} of the {intent_words:,} words of the stated intent "
                     f"({_percent(rules.max_intent_words, intent_words)}; the rubric's cap, "
                     "rationale.max_intent_words); the rest was not compared with the code"),
            facts={"intent_words": intent_words, "intent_words_read": rules.max_intent_words,
                   "share_read": round(rules.max_intent_words / intent_words, 4),
                   "max_intent_words": rules.max_intent_words},
        ))
    if code.echo_words_removed:
        evidence.append(Evidence(
            id=f"{DETECTIVE}.intent-echo", detective=DETECTIVE, kind="semantic", severity="low",
            summary=(f"{code.echo_words_removed} words of the added code repeat the PR's own description verbatim "
                     f"(runs of {rules.echo_ngram}+ words); they were left out of R"),
            facts={"words_removed": code.echo_words_removed, "echo_ngram": rules.echo_ngram},
        ))
    threshold = result.penalty_threshold
    touched = [a for a in result.anchors_found if specific(a)]
    if unread is not None:
        evidence.append(Evidence(
            id=f"{DETECTIVE}.intent-unanalysed", detective=DETECTIVE, kind="semantic",
            summary=(f"The change's code is in {unread}, which LogoMesh does not analyse: R reads its words, but no "
                     "intent penalty is computed from code LogoMesh cannot parse"),
            facts={"languages": unread},
        ))
    elif threshold is None and not touched and (kind is None or fits is None):
        shown = known or Familiarity(0, ())
        evidence.append(Evidence(
            id=f"{DETECTIVE}.intent-familiar", detective=DETECTIVE, kind="semantic",
            summary=(f"The change holds {shown.described - len(shown.unfamiliar)} of the {shown.described} words the "
                     "description talks about: it refers to this change, so R applies no intent penalty"),
            facts={"described": shown.described, "unfamiliar": list(shown.unfamiliar[:20]),
                   "familiar_share": round_score(shown.familiar_share)},
        ))
    elif threshold is None and not touched:
        evidence.append(Evidence(
            id=f"{DETECTIVE}.intent-exempt", detective=DETECTIVE, kind="semantic",
            summary=(f"The title declares a {kind} change, whose description need not read like the code, the "
                     f"change shows one ({fits}), and the description names no code the change leaves untouched: "
                     "R applies no intent penalty"),
            facts={"kind": kind, "shown_by": fits, "anchors": list(result.anchors)},
        ))
    elif threshold is None:
        evidence.append(Evidence(
            id=f"{DETECTIVE}.intent-anchored", detective=DETECTIVE, kind="semantic",
            summary=(f"The description names {', '.join(f'`{a}`' for a in touched[:5])}, which the "
                     "change touches: it refers to this change, so R applies no intent penalty"),
            facts={"anchors_found": list(result.anchors_found)},
        ))
    elif threshold is not None and score < threshold:
        penalty = cis.intent_penalty(rubric, score, threshold)
        missing = [a for a in result.anchors if a not in result.anchors_found
                   and (specific(a) or names_file(a) or library_attribute(a))]
        absent = list((known or Familiarity(0, ())).unfamiliar)
        named = (f"names {', '.join(f'`{a}`' for a in missing[:5])} but the change does not touch it, and "
                 if missing else f"talks about {', '.join(absent[:6])}, which the change never mentions, and "
                 if absent else "")
        if kind is not None and fits is None:
            named = (f"declares a {kind} change, which nothing in the change shows "
                     f"({KIND_SHOWN_BY.get(kind, 'nothing checked')} would), {named}")
        evidence.append(Evidence(
            id=f"{DETECTIVE}.intent-mismatch", detective=DETECTIVE, kind="intent-mismatch",
            severity="high" if score < threshold / 2 else "medium", confidence=0.9,
            summary=(f"The {source_words} {named}the code does not read like the change described, so the "
                     "integrity score is reduced (the intent penalty in the table). Closest: "
                     f"{best[0]['location'] if best else '-'}; farthest: {worst[0]['location'] if worst else '-'}"),
            facts={"score": score, "threshold": threshold, "floor": rubric.intent.floor,
                   "penalty": round_score(penalty), "anchors": list(result.anchors),
                   "unfamiliar_words": absent[:20], "declared_kind": kind if fits is None else None},
        ))
    return evidence
