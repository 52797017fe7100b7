"""Which changed product lines the head's tests ran, for JavaScript/TypeScript and Go mutants
(:mod:`sandbox.languages.mutants`): a mutant on a line no test ran is **uncovered** — no test can notice it, so it is
not run, and the report says "no test runs this line", as for Python.

**Go** (:func:`read_go_profile`): the ``go`` command's cover profile of the head's run (``-coverprofile``, every
package of the module instrumented with ``-coverpkg=./...``, so a test of one package covers the lines of another).
Each profile line is a block of statements (``example.com/calc/calc.go:3.24,5.2 1 0``): a line inside a block that
ran was run; a line inside blocks of which none ran was not; a line in no block (a declaration, a brace) is not
spoken of.

**JavaScript/TypeScript** (:func:`read_v8`): V8's own precise coverage (``NODE_V8_COVERAGE``, written by every node
process of the run) for node's runner and Mocha, which run the project's files as they are on disk (TypeScript under
node's type stripping keeps every position). A script's ranges count only when its length is the length of the
file in the tree: a file some loader transformed before it ran (a compiler, a bundler) has offsets that are not
the file's, and is not spoken of. A line was run when one of its characters lies in a range that ran (the innermost
range holding it counts).

The data is written by processes that run the PR's code, so a PR can forge it, but only against itself: a forged
"not run" marks its own mutants undetected, a forged "ran" runs them. A line the data does not speak of (no data, a
transformed file, a line outside every block) runs as before.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

V8_RUNNERS = ("node", "mocha")  # the runners that run the project's files as they are (Jest and Vitest transform them)
V8_READER = "coverage.cjs"  # a file of sandbox/languages/reporters
V8_FOLDER = "/sandbox/v8-coverage"  # NODE_V8_COVERAGE of the head's run: outside the tree
GO_BLOCK = re.compile(r"^(.+\.go):(\d+)\.\d+,(\d+)\.\d+ \d+ (\d+)$")
REPO_URL = "file:///sandbox/repo/"
MAX_LINE_CHARS = 4000  # a line longer than this (minified code) is judged on its first characters


@dataclass(frozen=True)
class LineCoverage:
    """``{path: lines some test ran}`` and ``{path: lines the data speaks of}``."""

    ran: Mapping[str, frozenset[int]] = field(default_factory=dict)
    known: Mapping[str, frozenset[int]] = field(default_factory=dict)

    def covered(self, path: str, line: int) -> bool | None:
        """Whether a test ran ``path:line``; None when the data does not say."""
        if line not in self.known.get(path, frozenset()):
            return None
        return line in self.ran.get(path, frozenset())

    def merged(self, other: LineCoverage) -> LineCoverage:
        paths = set(self.known) | set(other.known)
        return LineCoverage(
            ran={p: self.ran.get(p, frozenset()) | other.ran.get(p, frozenset()) for p in paths},
            known={p: self.known.get(p, frozenset()) | other.known.get(p, frozenset()) for p in paths})


def read_go_profile(text: str, tree_path: Callable[[str], str | None]) -> LineCoverage:
    """A Go cover profile; ``tree_path`` turns a profile's file (``example.com/calc/calc.go``) into its path in the
    tree (None: not the module's)."""
    ran: dict[str, set[int]] = {}
    known: dict[str, set[int]] = {}
    paths: dict[str, str | None] = {}
    for raw in text.splitlines():
        found = GO_BLOCK.match(raw.strip())
        if not found:
            continue
        name, first, last, count = found.group(1), int(found.group(2)), int(found.group(3)), int(found.group(4))
        if name not in paths:
            paths[name] = tree_path(name)
        path = paths[name]
        if path is None or last < first or last - first > 100_000:
            continue
        lines = range(first, last + 1)
        known.setdefault(path, set()).update(lines)
        if count > 0:
            ran.setdefault(path, set()).update(lines)
    return LineCoverage(ran={p: frozenset(v) for p, v in ran.items()},
                        known={p: frozenset(v) for p, v in known.items()})


def go_tree_path(module_path: str, module_dir: str) -> Callable[[str], str | None]:
    """The tree path of a cover profile's file name, for the module at ``module_dir`` whose path is
    ``module_path``."""
    def tree_path(name: str) -> str | None:
        if not module_path or not name.startswith(module_path + "/"):
            return None
        rest = name[len(module_path) + 1:]
        return posixpath.join(module_dir, rest) if module_dir else rest

    return tree_path


def _utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _innermost_count(ranges: list[tuple[int, int, int]], offset: int) -> int | None:
    """The count of the smallest range holding ``offset`` (ranges as ``(start, end, count)``)."""
    best: tuple[int, int] | None = None  # (span, count)
    for start, end, count in ranges:
        if start <= offset < end and (best is None or end - start < best[0]):
            best = (end - start, count)
    return None if best is None else best[1]


def _script_ranges(script: dict[str, object]) -> list[tuple[int, int, int]] | None:
    functions = script.get("functions")
    if not isinstance(functions, list):
        return None
    ranges: list[tuple[int, int, int]] = []
    for function in functions:
        if not isinstance(function, dict) or not isinstance(function.get("ranges"), list):
            return None
        for item in function["ranges"]:
            if not isinstance(item, dict):
                return None
            start, end, count = item.get("startOffset"), item.get("endOffset"), item.get("count")
            if not (isinstance(start, int) and isinstance(end, int) and isinstance(count, int)):
                return None
            ranges.append((start, end, count))
    return ranges


def read_v8(documents: Iterable[object], read: Callable[[str], str | None],
            wanted: Mapping[str, Iterable[int]], root: str = REPO_URL) -> LineCoverage:
    """V8 coverage documents (``{"result": [{"url", "functions": [{"ranges": […]}]}]}``, one per process) for the
    ``wanted`` lines of each tree path; ``read`` gives a path's text in the tree, whose URL is ``root``."""
    ran: dict[str, set[int]] = {}
    known: dict[str, set[int]] = {}
    sources: dict[str, tuple[str, int] | None] = {}
    for document in documents:
        scripts = document.get("result") if isinstance(document, dict) else None
        for script in scripts if isinstance(scripts, list) else []:
            url = script.get("url") if isinstance(script, dict) else None
            if not isinstance(url, str) or not url.startswith(root):
                continue
            path = url[len(root):]
            if path not in wanted:
                continue
            if path not in sources:
                text = read(path)
                sources[path] = None if text is None else (text, _utf16_length(text))
            source = sources[path]
            ranges = _script_ranges(script)
            if source is None or not ranges:
                continue
            text, length = source
            top = min(ranges, key=lambda r: (r[0], -r[1]))
            if top[0] != 0 or top[1] != length:  # the script V8 ran is not the file (a loader transformed it)
                continue
            _judge_lines(text, ranges, set(wanted[path]), ran.setdefault(path, set()), known.setdefault(path, set()))
    return LineCoverage(ran={p: frozenset(v) for p, v in ran.items()},
                        known={p: frozenset(v) for p, v in known.items() if v})


def _judge_lines(text: str, ranges: list[tuple[int, int, int]], lines: set[int], ran: set[int],
                 known: set[int]) -> None:
    offset = 0
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if number in lines:
            position = offset
            for char in line[:MAX_LINE_CHARS]:
                if not char.isspace():
                    count = _innermost_count(ranges, position)
                    if count is not None:
                        known.add(number)
                        if count > 0:
                            ran.add(number)
                            break
                position += _utf16_length(char)
        offset += _utf16_length(line)


def v8_reader_source() -> bytes:
    from importlib import resources

    return resources.files("sandbox.languages").joinpath("reporters", V8_READER).read_bytes()


def parse_v8_lines(stream: bytes) -> list[object]:
    """The documents of LogoMesh's coverage reader (``coverage.cjs``): one JSON script per line."""
    documents: list[object] = []
    for raw in stream.splitlines():
        try:
            script = json.loads(raw)
        except ValueError:
            continue
        documents.append({"result": [script]})
    return documents
