"""EnvironmentPlan: what a project needs to run its tests, detected from its files with no configuration.

``plan_environment(read, paths, offered)`` is a pure function of a tree (``read(path)`` returns a file's text or
None; ``paths`` lists the tree). It looks, in this order, at:

- ``pyproject.toml``: ``requires-python``; ``[build-system] requires`` (the editable install runs offline, so the
  backend must be in the environment); ``[project] dependencies``; the test extras and dependency groups
  (``test``, ``tests``, ``testing``; ``dev`` only when none of those exists), ``include-group`` resolved;
- ``setup.cfg``: ``install_requires`` and the same extras; ``setup.py`` implies setuptools, and the literal
  ``install_requires``, test extras and ``python_requires`` of its ``setup(...)`` call are read too (never run);
- ``requirements*.txt`` and ``requirements/*.txt`` (``.txt`` preferred over a pip-tools ``.in``) named for
  tests (or dev when none is), and the top-level ``requirements.txt``, with ``-r`` includes followed inside the tree;
- ``tox.ini`` ``[testenv]`` ``deps`` (``-r`` followed) and ``extras``;
- the extras the project's CI workflows install in the jobs that run its tests (``uv sync --all-extras``,
  ``pip install -e .[a,b]``; :func:`sandbox.runners_config.workflow_extras`);
- Poetry's ``[tool.poetry.dependencies]`` and its test (or dev) groups, and a ``Pipfile``'s ``[packages]`` and
  ``[dev-packages]``, their version constraints translated to pip's;
- lock files (uv, poetry, pdm, Pipfile) are named in the plan; the groups they lock are read as above.

The layout (``src/`` or flat) gives the import roots. The interpreter is the ``preferred`` one (the main sandbox
image's) when the project's ``requires-python`` admits it, else the newest offered version it admits (a companion
image's, see :mod:`sandbox.image`); none admitted is a plan with an ``error``. The plan's ``key`` hashes the
interpreter and the requirement lines: environments are cached under it.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import re
import tomllib
from collections.abc import Callable, Collection, Sequence
from pathlib import PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from checks.dependency_drift import admits, version_key
from checks.models import DeclaredRequirement, EnvironmentPlan
from checks.testpaths import LOCK_FILES, REQUIREMENTS_FILE
from sandbox.runners_config import ALL_EXTRAS, nox_deps, requirement_ok, tox_deps, workflow_extras
from sandbox.setup_py import read_setup_py

Reader = Callable[[str], str | None]
TEST_NAMES = ("test", "tests", "testing")
DEV_NAMES = ("dev", "develop", "development")
MAX_INCLUDE_DEPTH = 5
MAX_REQUIREMENTS = 300


def _toml(read: Reader, path: str) -> dict[str, object]:
    text = read(path)
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _table(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _pick(names: Sequence[str]) -> list[str]:
    """The test-named entries, or the dev-named ones when there is no test one."""
    tests = [n for n in names if n.lower() in TEST_NAMES]
    return tests or [n for n in names if n.lower() in DEV_NAMES]


def _requirement_lines(read: Reader, path: str, depth: int = 0, seen: set[str] | None = None) -> list[str]:
    seen = seen if seen is not None else set()
    if path in seen or depth > MAX_INCLUDE_DEPTH:
        return []
    seen.add(path)
    text = read(path)
    if text is None:
        return []
    lines: list[str] = []
    base = PurePosixPath(path).parent
    for raw in text.replace("\\\n", " ").splitlines():
        line = re.split(r"(^|\s)#", raw, maxsplit=1)[0].strip()
        if not line:
            continue
        include = re.match(r"^(-r|--requirement)\s*=?\s*(\S+)", line)
        if include:
            lines.extend(_requirement_lines(read, _join(base, include.group(2)), depth + 1, seen))
            continue
        if line.startswith("-"):
            continue  # options (-e ., -c, --hash, --index-url) are not requirements; the operator sets the index
        lines.append(re.sub(r"\s+--hash[= ]\S+", "", line))
    return lines


def _join(base: PurePosixPath, name: str) -> str:
    parts: list[str] = []
    for part in (base / name).parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return "/".join(parts)


def _groups(project: dict[str, object], groups: dict[str, object], name: str, depth: int = 0) -> list[str]:
    out: list[str] = []
    entries = groups.get(name)
    for item in entries if isinstance(entries, list) else []:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str) and depth < MAX_INCLUDE_DEPTH:
            out.extend(_groups(project, groups, str(item["include-group"]), depth + 1))
    return out


def choose_python(requires: str | None, offered: Sequence[str], classifiers: Sequence[str] = (),
                  preferred: str | None = None) -> tuple[str | None, str | None]:
    """(version, error): the ``preferred`` version (the main sandbox image's) when the project admits it, else the
    newest offered version ``requires`` admits. Without ``requires-python``, the ``Programming Language :: Python ::
    3.X`` classifiers choose the same way among the offered versions they list (when they list any offered one:
    classifiers inform, they never refuse)."""
    if not offered:
        return None, "the sandbox image offers no Python interpreter"

    def pick(candidates: Sequence[str]) -> str:
        if preferred is not None and preferred in candidates:
            return preferred
        return sorted(candidates, key=version_key)[-1]

    if not requires:
        listed = {c.rsplit("::", 1)[-1].strip() for c in classifiers
                  if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c.strip())}
        fitting = [v for v in offered if v in listed]
        return pick(fitting or offered), None
    admitted = [v for v in offered if admits(requires, v)]  # an invalid specifier admits every one
    if not admitted:
        return None, (f"requires-python {requires} admits none of the interpreters the sandbox images offer "
                      f"({', '.join(offered)})")
    return pick(admitted), None


def plan_environment(read: Reader, paths: Sequence[str], offered: Sequence[str],
                     preferred: str | None = None) -> EnvironmentPlan:
    names = set(paths)
    sources: list[str] = []
    requirements: list[str] = []
    origin: dict[str, str] = {}  # requirement line -> the first source naming it

    skipped: list[str] = []
    conflicts: list[str] = []
    optional: dict[str, str] = {}  # every optional requirement the project declares -> where, installed or not
    specifiers: dict[str, list[tuple[str, SpecifierSet]]] = {}  # project name -> (line, its specifier), in order

    def admitted(line: str, source: str) -> bool:
        """Whether ``line`` can hold beside the lines before it: a pin (``==``) another line of the same project
        excludes makes the set unsatisfiable (alembic's deprecated tox.ini pins another black than its
        pyproject.toml), so the later line is left out and named; the first source wins."""
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            return True
        name = _normal(requirement.name)
        for earlier, spec in specifiers.get(name, []):
            if _excludes(spec, requirement.specifier) or _excludes(requirement.specifier, spec):
                conflicts.append(f"{line} ({source}; conflicts with {earlier}, kept)")
                return False
        specifiers.setdefault(name, []).append((line, requirement.specifier))
        return True

    def add(source: str, lines: Sequence[str]) -> None:
        # pip gets requirements only: a path, a bare URL or a leftover ``factor:`` prefix is named, not installed
        skipped.extend(line for line in lines if not requirement_ok(line) and line not in skipped)
        fresh = [line for line in lines if line not in requirements and requirement_ok(line) and admitted(line, source)]
        if lines:
            sources.append(source)
        requirements.extend(fresh)
        for line in fresh:
            origin.setdefault(line, source)

    pyproject = _toml(read, "pyproject.toml") if "pyproject.toml" in names else {}
    project = _table(pyproject.get("project"))
    build = _table(pyproject.get("build-system"))
    declared = project.get("requires-python")
    requires_python = declared if isinstance(declared, str) else None
    install_project = False
    if pyproject:
        build_requires = _strings(build.get("requires")) or (["setuptools>=61", "wheel"] if project else [])
        if build.get("build-backend") or project or "setup.py" in names:
            install_project = True
            build_requires = build_requires or ["setuptools>=61", "wheel"]
            # what the backend's editable build asks for on top (get_requires_for_build_editable)
            if any(r.replace(" ", "").lower().startswith("hatchling") for r in build_requires):
                build_requires = [*build_requires, "editables"]
            add("pyproject.toml [build-system] requires", build_requires)
        add("pyproject.toml [project] dependencies", _strings(project.get("dependencies")))
        extras = _table(project.get("optional-dependencies"))
        for extra in extras:
            _declare(optional, f"pyproject.toml [project.optional-dependencies] {extra}", _strings(extras[extra]))
        for extra in _pick(list(extras)):
            add(f"pyproject.toml [project.optional-dependencies] {extra}", _strings(extras[extra]))
        groups = _table(pyproject.get("dependency-groups"))
        for group in _pick(list(groups)):
            add(f"pyproject.toml [dependency-groups] {group}", _groups(project, groups, group))
    poetry = _table(_table(pyproject.get("tool")).get("poetry"))
    if poetry:
        add("pyproject.toml [tool.poetry.dependencies]", _poetry(_table(poetry.get("dependencies"))))
        groups = _table(poetry.get("group"))
        for group in _pick(list(groups)):
            members = _table(_table(groups[group]).get("dependencies"))
            add(f"pyproject.toml [tool.poetry.group.{group}]", _poetry(members))
        if not _pick(list(groups)):
            add("pyproject.toml [tool.poetry.dev-dependencies]", _poetry(_table(poetry.get("dev-dependencies"))))
    if "Pipfile" in names:
        pipfile = _toml(read, "Pipfile")
        add("Pipfile [packages]", _poetry(_table(pipfile.get("packages"))))
        add("Pipfile [dev-packages]", _poetry(_table(pipfile.get("dev-packages"))))
    cfg_extras: dict[str, str] = {}

    def extras_of(extra: str) -> list[str]:
        optional = _table(project.get("optional-dependencies"))
        for name, value in optional.items():
            if _normal(name) == _normal(extra):
                return _strings(value)
        for name, text in cfg_extras.items():
            if _normal(name) == _normal(extra):
                return _cfg_list(text)
        return []

    if "setup.cfg" in names:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(read("setup.cfg") or "")
        except configparser.Error:
            parser = configparser.ConfigParser()
        if parser.has_option("options", "install_requires"):
            add("setup.cfg install_requires", _cfg_list(parser.get("options", "install_requires")))
        if parser.has_option("options", "python_requires") and requires_python is None:
            requires_python = parser.get("options", "python_requires").strip() or None
        if parser.has_section("options.extras_require"):
            section = dict(parser.items("options.extras_require"))
            cfg_extras.update(section)
            for extra in section:
                _declare(optional, f"setup.cfg extras_require {extra}", _cfg_list(section[extra]))
            for extra in _pick(list(section)):
                add(f"setup.cfg extras_require {extra}", _cfg_list(section[extra]))
    if ("setup.py" in names or "setup.cfg" in names) and not install_project:
        install_project = True
        add("setup.py (setuptools)", ["setuptools>=61", "wheel"])
    if "setup.py" in names:  # the project installs with --no-deps: what setup() requires must be listed here
        declared_py = read_setup_py(read("setup.py"))
        add("setup.py install_requires", declared_py.install_requires)
        cfg_extras.update({k: "\n".join(v) for k, v in declared_py.extras_require.items() if k not in cfg_extras})
        for extra, lines in declared_py.extras_require.items():
            _declare(optional, f"setup.py extras_require {extra}", lines)
        for extra in _pick(list(declared_py.extras_require)):
            add(f"setup.py extras_require {extra}", declared_py.extras_require[extra])
        requires_python = requires_python or declared_py.python_requires
    files = sorted(p for p in names if REQUIREMENTS_FILE.fullmatch(p))
    txt = {p.rsplit(".", 1)[0] for p in files if p.endswith(".txt")}
    files = [p for p in files if p.endswith(".txt") or p.rsplit(".", 1)[0] not in txt]
    stems = {p: PurePosixPath(p).stem.replace("requirements", "").strip("-_.") for p in files}
    picked = _pick([s for s in stems.values() if s])
    for path in files:
        stem = stems[path]
        if (stem == "" and path.startswith("requirements.")) or (stem and stem in picked):
            add(path, _requirement_lines(read, path))
    python, error = choose_python(requires_python, offered, _strings(project.get("classifiers")), preferred)

    def follow(path: str) -> list[str]:
        return _requirement_lines(read, path)

    for tool in (tox_deps(read, paths, python, follow),
                 nox_deps(read("noxfile.py") if "noxfile.py" in names else None, follow)):
        if tool is None:
            continue
        add(f"{tool.source} deps", tool.requirements)
        for extra in dict.fromkeys(tool.extras):
            add(f"{tool.source} extras {extra}", extras_of(extra))
        skipped.extend(line for line in tool.skipped if line not in skipped)
    ci = workflow_extras(read, paths)
    if ci is not None:
        declared_extras = [*_table(project.get("optional-dependencies")), *cfg_extras]
        picked_extras = declared_extras if ALL_EXTRAS in ci.extras else ci.extras
        for extra in dict.fromkeys(picked_extras):
            add(f"{ci.source} extras {extra}", extras_of(extra))
    if skipped:
        sources.append("not requirements pip installs from the index, left out: " + ", ".join(skipped[:10]))
    if conflicts:
        sources.append("pins that contradict an earlier source, left out: " + ", ".join(conflicts[:10]))
    src_layout = any(p.startswith("src/") and p.endswith(".py") for p in names)
    requirements = requirements[:MAX_REQUIREMENTS]
    return EnvironmentPlan(
        python=python,
        offered=tuple(offered),
        requires_python=requires_python,
        layout="src" if src_layout else "flat",
        import_roots=("src",) if src_layout else (),
        sources=tuple(sources),
        requirements=tuple(requirements),
        install_project=install_project,
        lock_files=tuple(sorted(n for n in names if n in LOCK_FILES)),
        key=plan_key(python, requirements),
        error=error,
        declared=tuple(DeclaredRequirement(requirement=r, source=origin[r]) for r in requirements),
        left_out=tuple(DeclaredRequirement(requirement=r, source=source) for r, source in optional.items()
                       if r not in requirements)[:MAX_REQUIREMENTS],
    )


def _declare(optional: dict[str, str], source: str, lines: Sequence[str]) -> None:
    for line in lines:
        optional.setdefault(line, source)


def _excludes(pins: SpecifierSet, other: SpecifierSet) -> bool:
    """Whether ``pins`` holds an exact pin (``==X``, no wildcard) that ``other`` does not admit."""
    return any(spec.operator in ("==", "===") and "*" not in spec.version
               and not other.contains(spec.version, prereleases=True) for spec in pins)


def _poetry(table: dict[str, object]) -> list[str]:
    """Poetry/Pipfile ``name = "^1.2"`` (or ``{version = …}``) as pip requirements; ``python`` is not one."""
    out: list[str] = []
    for name, spec in table.items():
        if name.lower() == "python":
            continue
        version = spec.get("version") if isinstance(spec, dict) else spec
        if isinstance(spec, dict) and not isinstance(version, str):
            continue  # a path, git or url dependency: not from the index
        text = str(version or "*").strip()
        if text in ("", "*"):
            out.append(name)
        elif text[0] == "^" or (text[0] == "~" and not text.startswith("~=")):
            out.append(f"{name}>={text[1:]}")
        elif text[0].isdigit():
            out.append(f"{name}=={text}")
        else:
            out.append(f"{name}{text}")
    return out


def lift_pins(requirements: Sequence[str], names: Collection[str]) -> tuple[str, ...]:
    """``requirements`` with the version specifiers of the projects ``names`` (normalised) taken off, their extras
    and environment markers kept: ``pytest==6.2.4; python_version >= "3"`` → ``pytest; python_version >= "3"``. A
    line that does not parse as a requirement, or that pins by URL, is kept as it is."""
    wanted = {_entry(n)[0] for n in names}
    out: list[str] = []
    for line in requirements:
        try:
            parsed = Requirement(line)
        except InvalidRequirement:
            out.append(line)
            continue
        if _normal(parsed.name) not in wanted or parsed.url:
            out.append(line)
            continue
        extras = f"[{','.join(sorted(parsed.extras))}]" if parsed.extras else ""
        out.append(f"{parsed.name}{extras}" + (f"; {parsed.marker}" if parsed.marker else ""))
    return tuple(out)


def undated_lines(plan: EnvironmentPlan) -> tuple[str, ...]:
    """The requirement lines of ``plan`` naming one of its :attr:`~EnvironmentPlan.undated` projects, and the bare
    names of those no line names (another requirement may bring them in: their files must be there to be
    taken). An undated entry with a version range (``pytest>=6.2.2,<7``, :func:`checks.dependency_drift.within_lines`)
    adds its range to the line naming it."""
    wanted = dict(_entry(n) for n in plan.undated)
    out: list[str] = []
    named: set[str] = set()
    for line in plan.requirements:
        try:
            parsed = Requirement(line)
        except InvalidRequirement:
            continue
        name = _normal(parsed.name)
        if name not in wanted:
            continue
        named.add(name)
        bound = wanted[name]
        if bound and not parsed.url:
            parsed.specifier &= bound
            line = str(parsed)
        out.append(line)
    return (*out, *(f"{n}{wanted[n]}" for n in sorted(wanted) if n not in named))


def _entry(entry: str) -> tuple[str, str]:
    """An undated entry's normalised project name and its version range (``""``: any): ``pytest>=6.2.2,<7`` →
    ``("pytest", ">=6.2.2,<7")``; an entry that does not parse is a bare name."""
    try:
        parsed = Requirement(entry)
    except InvalidRequirement:
        return _normal(entry.strip()), ""
    return _normal(parsed.name), str(parsed.specifier)


def plan_key(python: str | None, requirements: Sequence[str], uploaded_before: str | None = None,
             undated: Sequence[str] = (), undated_before: str | None = None) -> str:
    """What an environment is cached under (with the image and the index): the interpreter, the requirements,
    the upload time its releases were chosen before, if any, and the projects exempt from that time."""
    material: dict[str, object] = {"python": python, "requirements": list(requirements)}
    if uploaded_before:
        material["uploaded_before"] = uploaded_before
        if undated:
            material["undated"] = sorted(undated)
            material["undated_before"] = undated_before
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _cfg_list(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]


NOT_INSTALLED = "LOGOMESH-NOT-INSTALLED"


def install_script(python: str, env_dir: str, requirements_file: str, options: str = "") -> str:
    """The shell script that makes the venv and installs a plan's requirements, one failure not sinking the rest.

    The requirements are installed together first (one resolution, pins honoured together). When that fails, each
    line is installed on its own (from a one-line requirements file, so a hashed line keeps its hash): a line pip
    cannot install is printed as ``LOGOMESH-NOT-INSTALLED <line>`` followed by pip's last error line, and the
    others stay installed. Only when none of them installs does the script fail (an index that cannot be reached,
    say). ``options`` go to every pip call (``--require-hashes --no-deps`` for a resolved set)."""
    # --use-pep517: a setup.py-only sdist is built into a wheel (installed with its RECORD, so the environment
    # verifies and is cached), never run as ``setup.py install`` (an egg-info, no RECORD), which pip 23 still does
    pip = f"{env_dir}/bin/python -m pip install --quiet --use-pep517" + (f" {options}" if options else "")
    # Debian bullseye's venv copies the wheels its own pip 20 was debundled into (share/python-wheels): the image's
    # venvs get a whole pip (sandbox/image.py SUITE_PIP) that reads none of them, and the environment holds only
    # what a distribution's RECORD lists (sandbox/verify_env.py)
    return (f"set -e\n{python} -m venv {env_dir}\nrm -rf {env_dir}/share/python-wheels\n"
            + each_script(pip, requirements_file))


def each_script(pip: str, requirements_file: str, fail_when_none: bool = True) -> str:
    """Shell lines running ``pip -r requirements_file``; when that fails, ``pip`` on each line alone, a line that
    fails printed as ``LOGOMESH-NOT-INSTALLED <line>`` with pip's last error line. Unless ``fail_when_none`` is
    False, the lines fail when no line succeeds."""
    give_up = ('  if [ "$failed" -eq "$total" ]; then echo "none of the $total requirements could be installed" '
               '>&2; exit 1; fi\n') if fail_when_none else ""
    return f"""if ! {pip} -r {requirements_file} 2>/tmp/logomesh-pip.log; then
  tail -n 5 /tmp/logomesh-pip.log >&2
  echo "installing the requirements together failed; installing them one by one" >&2
  total=0; failed=0
  while IFS= read -r requirement; do
    [ -n "$requirement" ] || continue
    total=$((total + 1))
    printf '%s\\n' "$requirement" > /tmp/logomesh-one.txt
    if ! {pip} -r /tmp/logomesh-one.txt 2>/tmp/logomesh-pip.log; then
      failed=$((failed + 1))
      echo "{NOT_INSTALLED} $requirement"
      grep -v '^[[:space:]]*$' /tmp/logomesh-pip.log | grep -iv 'notice' | tail -n 1
    fi
  done < {requirements_file}
{give_up}fi
"""


def not_installed(output: str) -> tuple[str, ...]:
    """The requirements ``install_script`` reported it could not install, with pip's reason: ``req (reason)``."""
    lines = output.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if line.startswith(NOT_INSTALLED + " "):
            requirement = line[len(NOT_INSTALLED) + 1:].strip()
            reason = lines[i + 1].strip() if i + 1 < len(lines) and not lines[i + 1].startswith(NOT_INSTALLED) \
                else ""
            out.append(f"{requirement} ({reason[:200]})" if reason else requirement)
    return tuple(out)
