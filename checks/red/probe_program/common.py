# ruff: noqa: I001 - the lines above the program line are not part of the program's import block
"""Helpers of both probe programs: the configuration, the marker lines LogoMesh reads, importing a changed module."""

# Above the program line: for linters and type checkers only (the joined program defines these names itself).
from checks.red.probe_program import CONFIG_JSON
from checks.red.sightings import Sightings

# --- program ---
import contextlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from types import ModuleType
from typing import Any

CONFIG: dict[str, Any] = json.loads(CONFIG_JSON)
NONCE: str = CONFIG["nonce"]
MARK = "LOGOMESH-PROBE-" + NONCE
_out = sys.stdout
REPO = os.getcwd()
WATCH = Sightings(REPO)
# the packages put in sys.modules bare by import_alone: (name, directory relative to the repository)
ALONE: list[tuple[str, str]] = []


def emit(phase: str, **data: Any) -> None:
    data["phase"] = phase
    _out.write("\n" + MARK + " " + json.dumps(data, default=repr) + "\n")
    _out.flush()


def module_name(path: str) -> str:
    name = path[:-3].replace("/", ".") if path.endswith(".py") else path
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def source_root(path: str) -> str:
    """The directory the changed file's package is imported from, relative to the repository: the root, or the
    first ``src`` directory on its path (a src layout, at the top or in one package of a monorepo). The host's
    :func:`checks.red.race.module_of` names modules by the same rule."""
    parts = path.split("/")[:-1]
    return "/".join(parts[: parts.index("src") + 1]) if "src" in parts else ""


def import_roots(root: str) -> list[str]:
    """The directories to import from, the changed file's own first: its source root, and for a package of a
    monorepo (``<dir>/<package>/src``) the source roots of the packages beside it, as a development install of
    the whole repository puts them on the path (their namespace packages join)."""
    if not root:
        return [REPO]
    roots = [os.path.join(REPO, root)]
    package_dir = os.path.dirname(root)
    if package_dir:
        beside = os.path.join(REPO, os.path.dirname(package_dir))
        with contextlib.suppress(OSError):
            roots += sorted(os.path.join(beside, entry, "src") for entry in os.listdir(beside)
                            if os.path.isdir(os.path.join(beside, entry, "src"))
                            and os.path.join(beside, entry, "src") != roots[0])
    return [*roots, REPO]


def import_module(path: str) -> ModuleType:
    """The changed module under its real name: from the repository's root, or from its ``src/`` directory (a src
    layout, also inside one package of a monorepo, whose sibling packages' ``src`` directories join the path); a
    file outside any package is loaded on its own. A module whose package's ``__init__`` fails before the module ran
    is imported without it (:func:`import_alone`). An import that fails inside the project (a missing dependency, a
    syntax this Python rejects) fails with its own error, the package's if the module alone fails too."""
    root = source_root(path)
    for directory in reversed(import_roots(root)):
        if directory in sys.path:
            sys.path.remove(directory)
        sys.path.insert(0, directory)
    name = module_name(path[len(root) + 1:] if root else path)
    if os.path.isfile(os.path.join(os.path.dirname(os.path.join(REPO, path)), "__init__.py")):
        try:
            return importlib.import_module(name)
        except Exception as exc:
            if "." not in name or raised_in(exc, os.path.join(REPO, path)):
                raise
            try:
                return import_alone(name, os.path.join(REPO, root))
            except Exception:
                ALONE.clear()
                raise exc from None
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not name.startswith(exc.name):
            raise
        spec = importlib.util.spec_from_file_location(name.rpartition(".")[2], os.path.join(REPO, path))
        if spec is None or spec.loader is None:
            raise
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


def raised_in(exc: BaseException, file: str) -> bool:
    """Whether ``file`` ran when ``exc`` was raised (a frame of its traceback), or is the file a syntax error is in."""
    file = os.path.realpath(file)
    if isinstance(exc, SyntaxError) and exc.filename and os.path.realpath(exc.filename) == file:
        return True
    traceback = exc.__traceback__
    while traceback is not None:
        if os.path.realpath(traceback.tb_frame.f_code.co_filename) == file:
            return True
        traceback = traceback.tb_next
    return False


def import_alone(name: str, root: str) -> ModuleType:
    """The module ``name`` without its packages' ``__init__`` run: a package whose ``__init__`` fails before the
    module is reached (a sibling in a syntax this Python rejects, a dependency only another module needs) is put in
    ``sys.modules`` bare, over its directory, and the module is imported under its real name. What it imports from
    its package (``from . import x``) is imported the same way; what it needs the ``__init__`` to have defined
    fails with its own error."""
    top = name.split(".")[0]
    for loaded in [loaded for loaded in sys.modules if loaded == top or loaded.startswith(top + ".")]:
        del sys.modules[loaded]
    parts = name.split(".")[:-1]
    for depth in range(1, len(parts) + 1):
        package = ".".join(parts[:depth])
        directory = os.path.join(root, *parts[:depth])
        spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        spec.submodule_search_locations = [directory]
        bare = importlib.util.module_from_spec(spec)
        sys.modules[package] = bare
        if (package, os.path.relpath(directory, REPO)) not in ALONE:
            ALONE.append((package, os.path.relpath(directory, REPO)))
        if depth > 1:
            setattr(sys.modules[".".join(parts[:depth - 1])], parts[depth - 1], bare)
    return importlib.import_module(name)


def failure(exc: BaseException) -> dict[str, Any]:
    return {"ok": False, "error_type": type(exc).__name__, "error_module": type(exc).__module__,
            "error": str(exc)[:500]}
