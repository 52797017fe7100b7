"""GitHub Linguist's view of a repository's files: the language of a path (by its suffix, :func:`language`), which
languages LogoMesh analyses (``ANALYSED``: Python) and which code and tests it cannot read (:func:`unanalysed_code`,
:func:`unrun_tests`), and the path attributes read from the base commit's ``.gitattributes``: which changed files
the repository marks as generated, vendored or documentation (``linguist-generated``, ``linguist-vendored``,
``linguist-documentation``). Pure: the caller hands in paths and the file's text.

Patterns follow gitattributes: a pattern without a slash matches a file name at any depth, one with a slash is
anchored at the root, ``**`` spans directories; a later line wins; ``-attr`` and ``attr=false`` unset.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from pathlib import PurePosixPath

ATTRIBUTES = ("generated", "vendored", "documentation")
MAX_LINES = 2000

# The language of a file by its suffix: Python is what LogoMesh analyses (parses, runs the tests of, mutates); the
# programming languages after it are named in a review but never read as code; the rest are text, markup or data.
ANALYSED = frozenset({"Python"})
PROGRAMMING = {".py": "Python", ".pyi": "Python", ".js": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript",
               ".jsx": "JavaScript", ".ts": "TypeScript", ".mts": "TypeScript", ".cts": "TypeScript",
               ".tsx": "TypeScript", ".go": "Go", ".rs": "Rust", ".java": "Java", ".kt": "Kotlin", ".scala": "Scala",
               ".rb": "Ruby", ".php": "PHP", ".cs": "C#", ".swift": "Swift", ".c": "C", ".h": "C", ".cc": "C++",
               ".cpp": "C++", ".hpp": "C++", ".sh": "shell"}
LANGUAGES = {**PROGRAMMING, ".md": "Markdown", ".rst": "reStructuredText", ".txt": "text", ".yml": "YAML",
             ".yaml": "YAML", ".toml": "TOML", ".json": "JSON", ".cfg": "config", ".ini": "config", ".html": "HTML",
             ".css": "CSS"}
# Test files of the languages LogoMesh does not run: Jest/Vitest/Mocha names and directories, Go's ``_test.go``.
FOREIGN_TEST_SUFFIXES = (".test.js", ".test.mjs", ".test.cjs", ".test.jsx", ".test.ts", ".test.tsx", ".spec.js",
                         ".spec.mjs", ".spec.ts", ".spec.tsx", "_test.go", "_test.rs", "Test.java", "_spec.rb",
                         "_test.rb")
FOREIGN_TEST_DIRS = frozenset({"__tests__", "test", "tests", "spec"})


# what runs a language's tests, where that is not the language's own name (its version is the runtime's)
RUNTIMES = {"JavaScript": "Node.js", "TypeScript": "Node.js"}


def runtime(language: str) -> str:
    """The name a language's toolchain version goes with: ``Node.js 18``, ``Go 1.23``."""
    return RUNTIMES.get(language, language)


def language(path: str) -> str:
    """The language of ``path`` by its suffix (``JavaScript``, ``Markdown``), else its suffix or its name."""
    pure = PurePosixPath(path)
    suffix = pure.suffix.lower()
    return LANGUAGES.get(suffix, suffix or pure.name)


def unanalysed_code(paths: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The paths in a programming language LogoMesh does not analyse, by language (``{"Go": ("main.go",)}``)."""
    found: dict[str, list[str]] = {}
    for path in paths:
        name = PROGRAMMING.get(PurePosixPath(path).suffix.lower())
        if name is not None and name not in ANALYSED:
            found.setdefault(name, []).append(path)
    return {name: tuple(sorted(found[name])) for name in sorted(found)}


def unrun_tests(paths: Iterable[str]) -> dict[str, int]:
    """How many test files of each language LogoMesh does not run ``paths`` hold (``{"JavaScript": 12}``): files
    named like tests (``*.test.ts``, ``*_test.go``) or code of such a language under a test directory."""
    counts: dict[str, int] = {}
    for path in paths:
        name = PROGRAMMING.get(PurePosixPath(path).suffix.lower())
        if name is None or name in ANALYSED:
            continue
        parts = PurePosixPath(path).parts
        if path.endswith(FOREIGN_TEST_SUFFIXES) or any(part in FOREIGN_TEST_DIRS for part in parts[:-1]):
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def named_languages(counts: dict[str, int] | dict[str, tuple[str, ...]]) -> str:
    """``JavaScript (3 files), Go (1 file)``."""
    sizes = {name: value if isinstance(value, int) else len(value) for name, value in counts.items()}
    return ", ".join(f"{name} ({n} file{'s' if n != 1 else ''})" for name, n in sizes.items())


def _matches(path: str, pattern: str) -> bool:
    if not pattern.endswith("/**"):
        pattern = pattern.rstrip("/")
    if "/" not in pattern:
        return fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)
    pattern = pattern.lstrip("/")
    if pattern.endswith("/**"):
        return path.startswith(pattern[:-3] + "/") or fnmatch.fnmatchcase(path, pattern)
    if fnmatch.fnmatchcase(path, pattern):
        return True
    return pattern.startswith("**/") and fnmatch.fnmatchcase(path, pattern[3:])


def linguist_marks(gitattributes: str | None, paths: Iterable[str]) -> dict[str, str]:
    """``{path: "generated" | "vendored" | "documentation"}`` for the paths the file marks (the first of those
    attributes set, in that order)."""
    if not gitattributes:
        return {}
    rules: list[tuple[str, dict[str, bool]]] = []
    for line in gitattributes.splitlines()[:MAX_LINES]:
        fields = line.split()
        if not fields or fields[0].startswith("#") or fields[0].startswith("[attr]"):
            continue
        settings: dict[str, bool] = {}
        for field in fields[1:]:
            for name in ATTRIBUTES:
                key = f"linguist-{name}"
                if field in (key, f"{key}=true", f"{key}=1"):
                    settings[name] = True
                elif field in (f"-{key}", f"!{key}", f"{key}=false", f"{key}=0"):
                    settings[name] = False
        if settings:
            rules.append((fields[0], settings))
    marks: dict[str, str] = {}
    for path in paths:
        state: dict[str, bool] = {}
        for pattern, settings in rules:
            if _matches(path, pattern):
                state.update(settings)
        for name in ATTRIBUTES:
            if state.get(name):
                marks[path] = name
                break
    return marks
