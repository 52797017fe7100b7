"""What a project's tox, nox or CI workflow configuration installs for its tests, read statically.

tox (``tox.ini``, ``setup.cfg``'s ``[tox:tox]``, ``pyproject.toml``'s ``legacy_tox_ini`` or tox 4's TOML in
``tox.toml`` / ``[tool.tox]``):

- the environment is the plain test environment of the chosen interpreter: among the environments the file names
  (``envlist`` expanded, ``[testenv:NAME]`` sections), one whose every factor is the interpreter (``py311``,
  ``py3``, ``py``, ``3.11``) or a test word (``tests``, ``pytest``, ``unit`` …), the interpreter's first; else the
  base ``[testenv]``. A named section's keys fall back to ``[testenv]``'s;
- factor conditions (``coverage: coverage``, ``py3{10,11}: foo``, ``!pypy: bar``, ``py311-cov: x``) keep their
  line when the environment's factors satisfy them and drop it otherwise: ``name: req`` never reaches pip;
- ``{[section]key}`` is replaced by that key's value, ``{env:NAME:default}`` by its default, ``{toxinidir}`` by
  the tree's root; a line still holding a placeholder (``{envtmpdir}``, ``{posargs}``) is dropped;
- ``-r file`` is followed, ``-c``/other options are dropped, ``.[extra]`` / ``-e .[extra]`` name extras.

nox (``noxfile.py``), parsed with :mod:`ast` — never imported or run: the session named ``tests``/``test``/
``pytest``/``unit`` (else one that runs pytest), its ``session.install(...)`` arguments (string constants, and
names bound to lists of them), with the same treatment of ``-r``, ``-c``, ``.[extra]``.

GitHub Actions workflows (``.github/workflows/*.yml``, parsed as YAML — never run): the extras of the project
that the jobs running its tests install (:func:`workflow_extras`).

Only requirements pip can install from an index come out: anything that does not parse as a requirement (a path,
a bare URL, a leftover ``factor:`` prefix) is dropped and named in :attr:`ToolDeps.skipped`.
"""

from __future__ import annotations

import ast
import configparser
import itertools
import re
import shlex
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import yaml
from packaging.requirements import InvalidRequirement, Requirement

from checks import pyast
from checks.testpaths import WORKFLOW_FILE

Reader = Callable[[str], str | None]
Follow = Callable[[str], list[str]]
TEST_FACTORS = ("test", "tests", "testing", "pytest", "unit", "unittest", "unittests")
NOX_SESSIONS = ("tests", "test", "pytest", "unit", "unittests", "unit_tests", "tests_unit")
MAX_SUBSTITUTIONS = 5
_CONDITION = re.compile(r"^(!?[\w.{}]+(?:\s*[-,]\s*!?[\w.{}]+)*)\s*:(?!//)\s*(.*)$")
_REFERENCE = re.compile(r"\{\[([^\]]+)\]([\w-]+)\}")
_ENV = re.compile(r"\{env:[^:}]+(?::([^}]*))?\}")


@dataclass
class ToolDeps:
    """What a tox environment or nox session installs: requirement lines, extras of the project, and why."""

    source: str = ""
    requirements: list[str] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    env: str = ""


def python_factors(python: str | None) -> set[str]:
    """The factors the plain test environment of ``python`` ("3.11") carries."""
    if not python:
        return {"py", "py3"}
    digits = python.replace(".", "")
    return {"py", "py3", f"py{digits}", python, f"py{python}"}


# --- factor expressions ----------------------------------------------------------------------------------------


def expand(text: str) -> list[str]:
    """Brace expansion as tox does it: ``py3{10,11}-{a,b}`` is four names."""
    parts = re.split(r"(\{[^{}]*\})", text)
    choices = [p[1:-1].split(",") if p.startswith("{") and p.endswith("}") else [p] for p in parts]
    return ["".join(c.strip() for c in combo) for combo in itertools.product(*choices)]


def _top_level_split(text: str, sep: str) -> list[str]:
    out, depth, current = [], 0, ""
    for char in text:
        depth += char == "{"
        depth -= char == "}"
        if char == sep and depth == 0:
            out.append(current)
            current = ""
        else:
            current += char
    out.append(current)
    return out


def condition_holds(condition: str, factors: set[str]) -> bool:
    """``a,b`` is a or b, ``a-b`` is a and b, ``!a`` is not a; braces expand to alternatives."""
    for alternative in _top_level_split(condition.replace(" ", ""), ","):
        for expanded in expand(alternative):
            terms = [t for t in expanded.split("-") if t]
            if terms and all((t[1:] not in factors) if t.startswith("!") else (t in factors) for t in terms):
                return True
    return False


def conditional_lines(value: str, factors: set[str]) -> list[str]:
    """The lines of a tox setting that apply to an environment with ``factors``, their conditions removed."""
    out: list[str] = []
    for raw in value.replace("\\\n", " ").splitlines():
        line = re.split(r"(^|\s)#", raw, maxsplit=1)[0].strip()
        if not line:
            continue
        match = _CONDITION.match(line)
        if match and not re.match(r"^[A-Za-z0-9_.-]+\s*@", line):
            if not condition_holds(match.group(1), factors):
                continue
            line = match.group(2).strip()
        if line:
            out.append(line)
    return out


# --- the lines tox and nox hand to pip -------------------------------------------------------------------------


def _path(name: str) -> str:
    name = name.strip().strip("\"'")
    name = re.sub(r"^\{toxinidir\}/?", "", name)
    while name.startswith("./"):
        name = name[2:]
    return name


def _extras_of(target: str) -> list[str] | None:
    """``.`` / ``.[a,b]`` (the project itself): its extras; None for anything else."""
    match = re.fullmatch(r"\.(?:/)?\s*(?:\[([^\]]*)\])?", target.strip().strip("\"'"))
    if not match:
        return None
    return [e.strip() for e in (match.group(1) or "").split(",") if e.strip()]


def pip_arguments(args: Sequence[str], follow: Follow, into: ToolDeps) -> None:
    """Sort pip arguments (tox ``deps`` lines, ``session.install`` arguments) into ``into``."""
    tokens: list[str] = []
    for arg in args:
        tokens.extend(arg.split() if arg.lstrip().startswith("-") else [arg.strip()])
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        option = re.match(r"^(-r|--requirement|-c|--constraint|-e|--editable)(?:=|(?=\S))?(.*)$", token)
        if option:
            value = option.group(2)
            if not value and i < len(tokens):
                value, i = tokens[i], i + 1
            if option.group(1) in ("-r", "--requirement"):
                into.requirements.extend(follow(_path(value)))
            elif option.group(1) in ("-e", "--editable") and (extras := _extras_of(value)) is not None:
                into.extras.extend(extras)
            continue
        if token.startswith("-"):
            continue  # --pre, -U, --index-url …: options, the operator sets the index
        extras = _extras_of(token)
        if extras is not None:
            into.extras.extend(extras)
        elif requirement_ok(token):
            into.requirements.append(token)
        else:
            into.skipped.append(token)


def requirement_ok(line: str) -> bool:
    """Whether pip can install ``line`` from an index (a PEP 508 requirement, ``name @ url`` included)."""
    if "{" in line or "}" in line:
        return False
    try:
        Requirement(line)
    except InvalidRequirement:
        return False
    return True


# --- tox -------------------------------------------------------------------------------------------------------


class _Ini:
    """tox's INI settings: sections, with ``{[section]key}`` and ``{env:…}`` substitution."""

    def __init__(self, text: str, prefix: str = "") -> None:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(text)
        except configparser.Error:
            parser = configparser.ConfigParser(interpolation=None)
        self.parser = parser
        self.prefix = prefix  # setup.cfg names tox's own section [tox:tox]

    def get(self, section: str, key: str) -> str | None:
        if not self.parser.has_option(section, key):
            return None
        return self.substitute(self.parser.get(section, key), 0)

    def substitute(self, value: str, depth: int) -> str:
        if depth < MAX_SUBSTITUTIONS:
            value = _REFERENCE.sub(lambda m: self.substitute(self.parser.get(m.group(1), m.group(2), fallback=""),
                                                              depth + 1), value)
        value = _ENV.sub(lambda m: m.group(1) or "", value)
        return value.replace("{toxinidir}", ".")

    def env_names(self) -> list[str]:
        names: list[str] = []
        tox = self.prefix + "tox"
        for key in ("envlist", "env_list"):
            for line in _top_level_split((self.get(tox, key) or "").replace("\n", ","), ","):
                names.extend(expand(line.strip()) if line.strip() else [])
        for section in self.parser.sections():
            if section.startswith("testenv:"):
                names.extend(expand(section.split(":", 1)[1]))
        return names

    def section_of(self, env: str) -> str | None:
        for section in self.parser.sections():
            if section.startswith("testenv:") and env in expand(section.split(":", 1)[1]):
                return section
        return None


def choose_env(names: Sequence[str], python: str | None) -> tuple[str, set[str]]:
    """The plain test environment for ``python``: (its name, its factors)."""
    own = python_factors(python)
    fitting = []
    for name in dict.fromkeys(names):
        factors = set(name.split("-"))
        if factors and all(f in own or f in TEST_FACTORS for f in factors):
            fitting.append((not (factors & (own - {"py", "py3"})), len(factors), name))
    plain = f"py{python.replace('.', '')}" if python else "py"
    if not fitting:
        return plain, own
    name = sorted(fitting)[0][2]
    return name, set(name.split("-")) | own


def tox_deps(read: Reader, paths: Sequence[str], python: str | None, follow: Follow) -> ToolDeps | None:
    """What tox would install in the plain test environment, or None when the tree has no tox configuration."""
    names = set(paths)
    if "tox.toml" in names:
        return _tox_toml(_toml_table(read("tox.toml")), "tox.toml", python, follow)
    pyproject = _toml_table(read("pyproject.toml")) if "pyproject.toml" in names else {}
    tool = pyproject.get("tool")
    tool_tox = tool.get("tox") if isinstance(tool, dict) else None
    if "tox.ini" in names:
        return _tox_ini(_Ini(read("tox.ini") or ""), "tox.ini", python, follow)
    if isinstance(tool_tox, dict):
        legacy = tool_tox.get("legacy_tox_ini")
        if isinstance(legacy, str):
            return _tox_ini(_Ini(legacy), "pyproject.toml legacy_tox_ini", python, follow)
        return _tox_toml(tool_tox, "pyproject.toml [tool.tox]", python, follow)
    if "setup.cfg" in names:
        ini = _Ini(read("setup.cfg") or "", prefix="tox:")
        if ini.parser.has_section("tox:tox") or ini.parser.has_section("testenv"):
            return _tox_ini(ini, "setup.cfg", python, follow)
    return None


def _tox_ini(ini: _Ini, where: str, python: str | None, follow: Follow) -> ToolDeps | None:
    if not ini.parser.has_section("testenv") and not any(s.startswith("testenv:") for s in ini.parser.sections()):
        return None
    env, factors = choose_env(ini.env_names(), python)
    section = ini.section_of(env)

    def setting(key: str) -> str:
        if section is not None and ini.parser.has_option(section, key):
            return ini.get(section, key) or ""
        return ini.get("testenv", key) or ""

    out = ToolDeps(source=f"{where} [{section or 'testenv'}]", env=env)
    pip_arguments(conditional_lines(setting("deps"), factors), follow, out)
    for line in conditional_lines(setting("extras").replace(",", "\n"), factors):
        out.extras.append(line)
    return out


def _toml_table(text: str | None) -> dict[str, object]:
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        return {}


def _tox_toml(config: dict[str, object], where: str, python: str | None, follow: Follow) -> ToolDeps:
    """tox 4's TOML: ``env_run_base`` and ``env.<name>``; ``{replace = "ref", of = [...]}`` followed."""
    envs = config.get("env") if isinstance(config.get("env"), dict) else {}
    assert isinstance(envs, dict)
    listed = config.get("env_list") or config.get("envlist") or []
    names = [str(n) for n in listed if isinstance(n, str)] if isinstance(listed, list) else []
    env, factors = choose_env([*names, *envs], python)
    base = config.get("env_run_base") if isinstance(config.get("env_run_base"), dict) else {}
    assert isinstance(base, dict)
    own = envs.get(env) if isinstance(envs.get(env), dict) else None

    def resolve(value: object, depth: int = 0) -> list[str]:
        if isinstance(value, str):
            return [value.replace("{toxinidir}", ".")]
        if isinstance(value, list):
            return [line for item in value for line in resolve(item, depth)]
        if isinstance(value, dict) and value.get("replace") == "ref" and depth < MAX_SUBSTITUTIONS:
            path = value.get("of")
            node: object = config
            for part in path if isinstance(path, list) else []:
                node = node.get(part) if isinstance(node, dict) else None
            return resolve(node, depth + 1)
        if isinstance(value, dict) and value.get("replace") == "if" and depth < MAX_SUBSTITUTIONS:
            condition = str(value.get("condition") or "")
            holds = all(part.removeprefix("factor.") in factors
                        for part in re.split(r"\s+and\s+", condition) if part.startswith("factor."))
            return resolve(value.get("then") if holds else value.get("else"), depth + 1)
        return []

    def setting(key: str) -> list[str]:
        if own is not None and key in own:
            return resolve(own[key])
        return resolve(base.get(key))

    out = ToolDeps(source=f"{where} {'env.' + env if own is not None else 'env_run_base'}", env=env)
    pip_arguments(setting("deps"), follow, out)
    out.extras.extend(setting("extras"))
    return out


# --- nox -------------------------------------------------------------------------------------------------------


def nox_deps(source: str | None, follow: Follow) -> ToolDeps | None:
    """What the test session of a ``noxfile.py`` installs, read from its syntax tree (never imported)."""
    if not source:
        return None
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError):
        return None
    constants = _string_lists(tree.body)
    sessions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = _session_name(node)
            if name is not None:
                sessions[name] = node
    chosen = next((sessions[n] for n in NOX_SESSIONS if n in sessions), None)
    if chosen is None:
        chosen = next((f for f in sessions.values() if "pytest" in ast.unparse(f)), None)
    if chosen is None:
        return None
    name = next(n for n, f in sessions.items() if f is chosen)
    local = {**constants, **_string_lists(chosen.body)}
    args: list[str] = []
    session_arg = chosen.args.args[0].arg if chosen.args.args else "session"
    for call in ast.walk(chosen):
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "install"
                and isinstance(call.func.value, ast.Name) and call.func.value.id == session_arg):
            for arg in call.args:
                args.extend(_strings_of(arg, local))
    out = ToolDeps(source=f"noxfile.py session {name}", env=name)
    pip_arguments(args, follow, out)
    return out


def _session_name(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        label = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if label != "session":
            continue
        if isinstance(decorator, ast.Call):
            for keyword in decorator.keywords:
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                    return str(keyword.value.value)
        return node.name
    return None


def _string_lists(body: Sequence[ast.stmt]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for statement in body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if isinstance(target, ast.Name):
            strings = _strings_of(value, out)
            if strings or isinstance(value, (ast.List, ast.Tuple)):
                out[target.id] = strings
    return out


def _strings_of(node: ast.expr, names: dict[str, list[str]]) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [s for element in node.elts for s in _strings_of(element, names)]
    if isinstance(node, ast.Starred):
        return _strings_of(node.value, names)
    if isinstance(node, ast.Name):
        return list(names.get(node.id, []))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _strings_of(node.left, names) + _strings_of(node.right, names)
    return []


# --- CI workflows ----------------------------------------------------------------------------------------------

MAX_WORKFLOWS = 20
_TEST_RUN = re.compile(r"\b(?:pytest|tox|nox|unittest|coverage\s+run|make\s+(?:test|check)[\w-]*)\b")
_INSTALL_RUN = re.compile(r"\b(?:uv\s+sync|uv\s+run|uv\s+pip\s+install|pip3?\s+install|python3?\s+-m\s+pip\s+install|"
                          r"poetry\s+install|pdm\s+(?:install|sync))\b([^\n;&|]*)")
# a workflow step that runs a recipe of the project's task runner (``just … cov``, ``make test``): the recipe's own
# lines are read as the step's (cattrs' ``cov`` recipe runs ``uv run --all-extras … coverage run -m pytest``)
_RECIPE_RUN = re.compile(r"(?:^|[\s;&|(])(just|make)((?:[ \t]+[^\s;&|)]+)*)")
RECIPE_FILES = {"just": ("justfile", "Justfile", ".justfile"), "make": ("GNUmakefile", "makefile", "Makefile")}
_EXPRESSION = re.compile(r"\$\{\{.*?\}\}")  # a GitHub Actions expression in a step's text
MAX_RECIPE_DEPTH = 2  # a recipe that calls another (cattrs' ``covall`` → ``cov``): that far, no further
MAX_RECIPE_LINES = 200
ALL_EXTRAS = "*"


def _shell_words(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def _install_extras(arguments: str) -> list[str]:
    """The project's extras one install command of a workflow names (``ALL_EXTRAS`` for ``--all-extras``)."""
    words = _shell_words(arguments)
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--all-extras":
            out.append(ALL_EXTRAS)
            continue
        option = re.match(r"^(--extras?|-E)(?:=(.*))?$", word)
        if option:
            value = option.group(2)
            if value is None and i < len(words):
                value, i = words[i], i + 1
            out.extend(e for e in re.split(r"[\s,]+", value or "") if e)
            continue
        if word in ("-e", "--editable") and i < len(words):
            word, i = words[i], i + 1
        extras = _extras_of(word)
        if extras:
            out.extend(extras)
    return out


def recipe_files(read: Reader, paths: Sequence[str]) -> dict[str, str]:
    """The task runners' files at the repository's root, read once: ``{"just": justfile text, "make": Makefile
    text}`` for those present (:data:`RECIPE_FILES`, first name found)."""
    present = set(paths)
    out: dict[str, str] = {}
    for tool, names in RECIPE_FILES.items():
        source = next((name for name in names if name in present), None)
        text = read(source) if source is not None else None
        if text:
            out[tool] = text
    return out


def recipe_lines(recipes: dict[str, str], run: str, depth: int = 0) -> list[str]:
    """The lines of the ``just`` or ``make`` recipes that ``run`` (a workflow step's shell text) invokes, from the
    repository's justfile or Makefile (``recipes``, :func:`recipe_files`; never run), with the lines of the recipes
    those invoke, up to :data:`MAX_RECIPE_DEPTH`. ``make`` names targets (every word that is no option or
    assignment); ``just`` names one recipe (its first such word; the words after it are the recipe's arguments)."""
    out: list[str] = []
    run = _EXPRESSION.sub("expression", run)  # ``python=${{ matrix.python-version }}`` is one word
    for match in _RECIPE_RUN.finditer(run):
        tool = match.group(1)
        text = recipes.get(tool)
        if not text:
            continue
        names = [w for w in _shell_words(match.group(2)) if not w.startswith("-") and "=" not in w]
        for name in names[:1] if tool == "just" else names:
            body = _recipe_body(text, name, tool)
            out.extend(body)
            if depth + 1 < MAX_RECIPE_DEPTH:
                for line in body:
                    out.extend(recipe_lines(recipes, line, depth + 1))
    return out[:MAX_RECIPE_LINES]


def _recipe_body(text: str, name: str, tool: str) -> list[str]:
    """The indented lines under the recipe ``name`` of a justfile or Makefile (``name …:``; a Makefile's rule lines
    start with a tab), ``@`` and ``-`` prefixes dropped."""
    # a just recipe's parameters may carry defaults (``cov *args="-x tests":``); ``name := …`` is a variable
    header = re.compile(rf"^@?{re.escape(name)}(?=[\s:])(?!\s*:?=)" if tool == "just"
                        else rf"^(?:[^\s:=#]+\s+)*{re.escape(name)}(?:\s+[^\s:=#]+)*\s*:(?![:=])")
    body: list[str] = []
    inside = False
    for line in text.splitlines():
        if inside:
            if line.startswith("\t") or (tool == "just" and line.startswith(" ")):
                body.append(line.strip().lstrip("@-").strip())
                continue
            if not line.strip():
                continue
            inside = False
        if header.match(line):
            inside = True
    return [line for line in body if line and not line.startswith("#")]


def workflow_extras(read: Reader, paths: Sequence[str]) -> ToolDeps | None:
    """The extras of the project that its CI installs in the jobs that run its tests, read from the GitHub Actions
    workflows (``.github/workflows/*.yml``; never run): a job whose steps run pytest, tox, nox, unittest,
    ``coverage run`` or ``make test`` (or whose name says test), the lines of the ``just``/``make`` recipes its
    steps run read as its own (:func:`recipe_lines`), its ``uv sync``/``uv run``/``pip install``/``poetry install``
    commands' ``--all-extras`` (:data:`ALL_EXTRAS`), ``--extra X``/``-E X`` and ``.[a,b]`` targets. The extras a
    project's own CI installs for its tests are the ones its tests import (pydantic-settings' docs examples import
    ``azure``, an extra no test-named group lists)."""
    found: list[str] = []
    sources: list[str] = []
    workflows = sorted(p for p in paths if WORKFLOW_FILE.fullmatch(p))[:MAX_WORKFLOWS]
    recipes = recipe_files(read, paths) if workflows else {}
    for path in workflows:
        try:
            document = yaml.safe_load(read(path) or "")
        except yaml.YAMLError:
            continue
        jobs = document.get("jobs") if isinstance(document, dict) else None
        if not isinstance(jobs, dict):
            continue
        for job_id, job in jobs.items():
            if not isinstance(job, dict) or not isinstance(job.get("steps"), list):
                continue
            runs = [str(step["run"]) for step in job["steps"] if isinstance(step, dict) and "run" in step]
            runs += [line for run in runs for line in recipe_lines(recipes, run)]
            label = f"{job_id} {job.get('name', '')}".lower()
            if not (any(_TEST_RUN.search(run) for run in runs) or re.search(r"\btests?\b", label)):
                continue
            extras = [extra for run in runs for match in _INSTALL_RUN.finditer(run)
                      for extra in _install_extras(match.group(1))]
            if extras:
                found.extend(extras)
                sources.append(f"{path} job {job_id}")
    if not found:
        return None
    return ToolDeps(source=", ".join(dict.fromkeys(sources)), extras=list(dict.fromkeys(found)))
