# ruff: noqa: I001 - the lines above the program line are not part of the program's import block
"""Helpers of both probe programs: the configuration, the marker lines LogoMesh reads, importing a changed module."""

# Above the program line: for linters and type checkers only (the joined program defines these names itself).
from checks.red.probe_program import CONFIG_JSON
from checks.red.sightings import Sightings

# --- program ---
import importlib
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


def emit(phase: str, **data: Any) -> None:
    data["phase"] = phase
    _out.write("\n" + MARK + " " + json.dumps(data, default=repr) + "\n")
    _out.flush()


def module_name(path: str) -> str:
    name = path[:-3].replace("/", ".") if path.endswith(".py") else path
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def import_module(path: str) -> ModuleType:
    """The changed module under its real name: from the repository's root, or from its ``src/`` directory (a src
    layout); a file outside any package is loaded on its own. An import that fails inside the project (a missing
    dependency, a syntax this Python rejects) fails with its own error."""
    roots = [REPO] + ([os.path.join(REPO, "src")] if path.startswith("src/") else [])
    for root in reversed(roots):
        if root not in sys.path:
            sys.path.insert(0, root)
    name = module_name(path.removeprefix("src/") if path.startswith("src/") else path)
    if os.path.isfile(os.path.join(os.path.dirname(os.path.join(REPO, path)), "__init__.py")):
        return importlib.import_module(name)
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


def failure(exc: BaseException) -> dict[str, Any]:
    return {"ok": False, "error_type": type(exc).__name__, "error_module": type(exc).__module__,
            "error": str(exc)[:500]}
