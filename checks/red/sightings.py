"""What code really calls, seen by an audit hook (``sys.addaudithook``); standard library only.

This module runs *inside* the sandbox: the test collector (``sandbox/inside/collector.py``) imports it from
``/sandbox/logomesh``, and every red-team probe carries its source (``checks/red/probe_source.py``). A shell
command, a program started through ``sh -c``, code executed from a string, a class a pickle resolves — whatever
names or strings were used to reach them — is recorded with the innermost frame of the repository's product
code that led to it. The arguments are kept (short) so a probe can tell whether its payload reached the call.
"""

from __future__ import annotations

import sys
from typing import Any

# audit events that mean "a shell or code built at run time"; see the audit events table of the docs
SHELL_AND_CODE = frozenset({"os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen", "exec",
                            "os.popen"})
# what a probe watches besides: the classes a pickle resolves
WATCHED = SHELL_AND_CODE | {"pickle.find_class"}
MAX_DETAIL = 300
# standard-library modules that build their own code from strings (dataclass methods, namedtuple's __new__):
# what they execute is theirs, not the caller's data
CODE_GENERATORS = ("/dataclasses.py", "/collections/__init__.py")
# standard-library modules that evaluate a type annotation written as a string (``typing.ForwardRef``, what
# ``typing.get_type_hints`` and pydantic run for ``from __future__ import annotations``; ``inspect.get_annotations``):
# the string is the project's source text, not data, unless it reaches for what a payload needs
ANNOTATION_EVALUATORS = ("/typing.py", "/inspect.py", "/annotationlib.py")
# names an annotation never needs and code execution through ``eval`` does (dunders are refused as a class:
# ``__import__``, ``__class__``, ``__subclasses__``, ``__globals__``, ``__builtins__`` …)
UNSAFE_NAMES = frozenset({"eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "globals", "locals",
                          "vars", "breakpoint", "input", "system", "popen", "spawn", "run", "call", "check_output",
                          "loads", "load", "import_module"})
# what the top level of string-built code may do and still only *define* (functions, constants): no call, no
# import, no class body run, no attribute or item written. alembic and SQLAlchemy generate their proxy methods so
# at import (``exec("def %(name)s(...)" % ...)``); whatever a generated function later runs is watched in its turn
DEFINING = frozenset({"RESUME", "NOP", "CACHE", "EXTENDED_ARG", "LOAD_CONST", "LOAD_SMALL_INT", "LOAD_NAME",
                      "BUILD_TUPLE", "BUILD_MAP", "BUILD_CONST_KEY_MAP", "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE",
                      "STORE_NAME", "RETURN_VALUE", "RETURN_CONST", "POP_TOP", "MAKE_CELL", "COPY_FREE_VARS",
                      "LOAD_CLOSURE"})
# the file names code compiled from a string gets: exec/eval/compile, timeit, code.interact and the like
FROM_STRINGS = frozenset({"<string>", "<timeit-src>", "<input>", "<stdin>", "<console>"})


def is_test_file(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")
            or any(p in ("test", "tests", "testing") for p in parts[:-1]))


def _third_party(caller: str, repo: str) -> bool:
    """Whether a file belongs to an installed distribution (not the repository under review, wherever it lies)."""
    return not caller.startswith(repo) and ("/site-packages/" in caller or "/dist-packages/" in caller)


def _annotation(code: Any) -> bool:
    """Whether code ``typing`` evaluates reads like a type annotation: no name a payload needs, anywhere in it."""
    names: set[str] = set()
    stack = [code]
    while stack:  # nested code objects (a lambda, a comprehension) are searched too
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if hasattr(c, "co_names"))
    return not any(name in UNSAFE_NAMES or (name.startswith("__") and name.endswith("__")) for name in names)


def _defines_only(code: Any) -> bool:
    """Whether string-built code only defines functions and names at its top level (:data:`DEFINING`)."""
    import dis

    try:
        return all(instruction.opname in DEFINING for instruction in dis.get_instructions(code))
    except Exception:  # not a code object dis can read: not known to be harmless
        return False


def _interesting(event: str, args: tuple[Any, ...], caller: str, repo: str) -> bool:
    if event == "exec":
        # modules and functions being run are not interesting; code built from a string is, unless the standard
        # library built it for a dataclass or a namedtuple, or an installed library (typing_inspection, which
        # pydantic models import, attrs …) built its own: what a library generates for itself is not the
        # caller's data (a library that evaluates a string the project hands it is the static pass's to see); nor
        # is a string annotation ``typing`` evaluates, unless it names what a payload needs, nor code that only
        # defines functions (what those functions run later is watched in its turn)
        code = args[0] if args else None
        built = getattr(code, "co_filename", None) in FROM_STRINGS
        return (built and not caller.endswith(CODE_GENERATORS) and not _third_party(caller, repo)
                and not (caller.endswith(ANNOTATION_EVALUATORS) and _annotation(code)) and not _defines_only(code))
    if event == "subprocess.Popen":
        argv = args[1] if len(args) > 1 else None
        return isinstance(argv, (list, tuple)) and len(argv) >= 2 and str(argv[0]).endswith("sh") and argv[1] == "-c"
    if event == "pickle.find_class":
        return True
    return event in WATCHED


def _detail(event: str, args: tuple[Any, ...]) -> str:
    if event == "exec":
        return ""
    if event == "pickle.find_class":
        return ".".join(str(a) for a in args[:2])
    if event == "subprocess.Popen":
        return " ".join(str(a) for a in args[1])[:MAX_DETAIL]
    return str(args[0] if args else "")[:MAX_DETAIL]


class Sightings:
    """Records watched events whose call stack passes through the repository's product code (not its tests)."""

    def __init__(self, repo: str, limit: int = 50, events: frozenset[str] = WATCHED, details: bool = True) -> None:
        self.repo = repo.rstrip("/") + "/"
        self.limit = limit
        self.events = events
        self.details = details
        self.seen: dict[tuple[str, str, int, str], dict[str, Any]] = {}
        self.active = True
        self.literal: Any = None  # the frame whose last ``exec``/``eval`` compiled a string literal of its own code
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "compile" and "exec" in self.events and self.active:
            self._note_literal(args)
            return
        if not self.active or event not in self.events or len(self.seen) >= self.limit:
            return
        try:
            frame: Any = sys._getframe(1)
            if not _interesting(event, args, frame.f_code.co_filename, self.repo):
                return
            if event == "exec" and frame is self.literal:
                # six's ``exec_("def reraise(...)")`` at import: the code is a literal of the file, not data
                self.literal = None
                return
            while frame is not None:
                filename = frame.f_code.co_filename
                if filename.startswith(self.repo):
                    path = filename[len(self.repo):]
                    if not is_test_file(path):
                        detail = _detail(event, args) if self.details else ""
                        key = (event, path, frame.f_lineno, detail)
                        seen: dict[str, Any] = {"event": event, "path": path, "line": frame.f_lineno}
                        if self.details:
                            seen["detail"] = detail
                        self.seen.setdefault(key, seen)
                    return
                frame = frame.f_back
        except Exception:  # an audit hook must never break the code it watches
            return

    def _note_literal(self, args: tuple[Any, ...]) -> None:
        """Remember the frame compiling a string that is a constant of its own code (``exec("...")``), so the
        ``exec`` that follows is not taken for code built from data; anything formatted or passed in is."""
        try:
            frame: Any = sys._getframe(2)  # past this method and the hook
            source = args[0] if args else None
            if isinstance(source, bytes):
                source = source.decode("utf-8")
            self.literal = frame if isinstance(source, str) and source in frame.f_code.co_consts else None
        except Exception:  # an audit hook must never break the code it watches
            self.literal = None

    def take(self) -> list[dict[str, Any]]:
        """Everything seen since the last call, oldest first."""
        found = list(self.seen.values())
        self.seen = {}
        return found
