"""Probes and oracles: more payload families executed for real, and the oracle's reading of probe output."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from checks.models import ProbeResult, TestRunResult, TestSpec
from checks.red.hypotheses import Attack, Hypothesis, Target
from checks.red.payloads import families
from checks.red.probes import build_probe, judge_probe, probe_nonce
from rubric import Rubric
from tests.red.conftest import Attack as AttackRunner


async def test_unbounded_recursion_is_confirmed_as_medium(attack: AttackRunner) -> None:
    source = '"""Trees."""\n\n\ndef depth(tree):\n    return 1 + max((depth(c) for c in tree), default=0)\n'
    analysis, _agent, _sandbox = await attack({"shop/tree.py": source})
    assert [(f.severity, f.confirmed, f.cwe) for f in analysis.findings] == [("medium", True, "CWE-674")]
    assert "RecursionError" in (analysis.findings[0].effect or "")


async def test_yaml_deserialisation_in_a_method_is_confirmed(attack: AttackRunner) -> None:
    source = ('"""Config."""\nimport yaml\n\n\nclass Loader:\n    def parse(self, text):\n'
              '        return yaml.load(text, Loader=yaml.Loader)\n')
    analysis, _agent, _sandbox = await attack({"shop/conf.py": source})
    assert [(f.severity, f.confirmed) for f in analysis.findings] == [("critical", True)]
    assert "yaml-tag" in (analysis.findings[0].payload or "")


async def test_a_yaml_load_gets_the_yaml_payload_even_with_one_probe(attack: AttackRunner) -> None:
    """A pickle never runs through yaml.load: the one probe a short budget allows goes to the YAML tag."""
    source = '"""Config."""\nimport yaml\n\n\ndef read_config(text):\n    return yaml.load(text, Loader=yaml.Loader)\n'
    analysis, agent, _sandbox = await attack({"shop/conf.py": source}, overrides={"red": {"max_steps": 1}})
    assert [(f.severity, f.confirmed) for f in analysis.findings] == [("critical", True)]
    assert agent.last_search is not None and agent.last_search.steps == 1
    assert "yaml-tag" in (analysis.findings[0].payload or "")


def test_deserialisation_payloads_follow_the_sinks_loader() -> None:
    def names(sink: str) -> list[str]:
        return [f.name for f in families("deserialization", sink)]

    assert names("yaml.load") == names("B506") == ["yaml-tag"]
    assert names("pickle.loads") == names("_pickle.load") == names("B301") == ["pickle-bytes", "pickle-base64",
                                                                               "pickle-stream"]
    assert names("marshal.loads") == ["marshal-code"]
    assert names("jsonpickle.decode") == names("") == [f.name for f in families("deserialization")]
    assert len(names("")) == 5


async def test_async_targets_are_awaited(attack: AttackRunner) -> None:
    source = '"""Jobs."""\nimport os\n\n\nasync def run_job(command):\n    os.system(command)\n'
    analysis, _agent, _sandbox = await attack({"shop/jobs.py": source})
    assert [(f.severity, f.confirmed) for f in analysis.findings] == [("critical", True)]


async def test_a_module_that_cannot_import_is_not_confirmed(attack: AttackRunner) -> None:
    source = '"""Broken."""\nimport not_a_module_anywhere\n\n\ndef f(x):\n    return eval(x)\n'
    analysis, agent, _sandbox = await attack({"shop/broken.py": source})
    assert [(f.severity, f.confirmed) for f in analysis.findings] == [("high", False)]
    assert "could not reach the target" in (analysis.findings[0].effect or "")
    assert agent.last_search is not None
    assert all(step.reward == 0.0 for step in agent.last_search.trace)


class FailingSandbox:
    async def run_tests(self, spec: TestSpec) -> TestRunResult:  # pragma: no cover - not used by the red agent
        raise NotImplementedError

    async def run_probe(self, code: str, timeout_seconds: float, runtime: str = "python",
                        beside: str | None = None) -> ProbeResult:
        raise RuntimeError("docker daemon went away")


async def test_a_sandbox_failure_is_recorded_not_fatal(rubric: Rubric) -> None:
    from checks.red import MCTSRedTeam
    from tests.red.fixtures import VULNERABLE, make_case

    path, source = VULNERABLE["eval"]
    analysis = await MCTSRedTeam().attack(make_case({path: source}), rubric, FailingSandbox())
    assert [(f.severity, f.confirmed) for f in analysis.findings] == [("high", False)]
    assert analysis.search is not None
    assert "docker daemon went away" in analysis.search["sandbox_errors"][0]


ATTACK = Attack(Hypothesis(kind="sql-injection", path="m.py", line=3, sink=".execute", detail="d",
                           target=Target(path="m.py", qualname="f", params=("conn", "name")), tainted=("name",)),
                argument="name", family="quote")


def lines(nonce: str, *phases: dict[str, Any]) -> str:
    return "".join(f"LOGOMESH-PROBE-{nonce} {json.dumps(p)}\n" for p in phases)


def test_the_probe_carries_its_data_as_a_literal_not_as_code() -> None:
    hostile_path = "x'); import os; os.system('boom');('.py"
    hostile = Attack(Hypothesis(kind="code-injection", path=hostile_path, line=1, sink="eval", detail="d",
                                target=Target(path=hostile_path, qualname="f", params=("a",))),
                     argument="a", family="expression")
    code = build_probe(hostile, "n0nce")
    tree = ast.parse(code)
    config_line = next(n for n in tree.body
                       if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "CONFIG_JSON")
    literal = config_line.value
    assert isinstance(literal, ast.Constant) and isinstance(literal.value, str)
    assert json.loads(literal.value)["path"] == hostile_path
    assert sum(1 for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "CONFIG_JSON") == 1
    assert not any(isinstance(n, ast.Call) and ast.unparse(n.func) == "os.system" for n in ast.walk(tree))


def test_sql_oracle_needs_a_syntax_error_that_a_benign_value_does_not_cause() -> None:
    nonce = probe_nonce(1, ATTACK)
    base = {"phase": "baseline", "ok": False, "error_type": "OperationalError", "error": "no such table: users"}
    syntax = {"phase": "attack", "ok": False, "error_type": "OperationalError", "error": 'unrecognized token: "\'"'}
    same = {"phase": "attack", "ok": False, "error_type": "OperationalError", "error": "no such table: users"}
    ok = ProbeResult(exit_code=0, stdout=lines(nonce, {"phase": "import", "ok": True}, base, syntax))
    assert judge_probe(ATTACK, nonce, ok).confirmed
    parameterised = ProbeResult(exit_code=0, stdout=lines(nonce, {"phase": "import", "ok": True}, base, same))
    assert not judge_probe(ATTACK, nonce, parameterised).confirmed


def test_markers_without_the_nonce_are_ignored_and_first_phase_wins() -> None:
    nonce = probe_nonce(1, ATTACK)
    forged = lines("0" * 20, {"phase": "import", "ok": True}, {"phase": "baseline", "ok": True},
                   {"phase": "attack", "ok": False, "error": "syntax error"})
    outcome = judge_probe(ATTACK, nonce, ProbeResult(exit_code=0, stdout=forged))
    assert not outcome.confirmed and outcome.reward == 0.0
    real_then_forged = lines(nonce, {"phase": "import", "ok": False, "error_type": "ImportError", "error": "x"},
                             {"phase": "import", "ok": True})
    assert judge_probe(ATTACK, nonce, ProbeResult(exit_code=0, stdout=real_then_forged)).reward == 0.0


def test_a_timeout_confirms_exhaustion_only_after_a_benign_call_completed() -> None:
    exhaust = Attack(Hypothesis(kind="resource-exhaustion", path="m.py", line=1, sink="f", detail="d",
                                target=Target(path="m.py", qualname="f", params=("a",)), tainted=("a",)),
                     argument="a", family="deep-list")
    nonce = probe_nonce(2, exhaust)
    after_baseline = lines(nonce, {"phase": "import", "ok": True}, {"phase": "baseline", "ok": True})
    assert not judge_probe(exhaust, nonce, ProbeResult(exit_code=None, stdout=after_baseline, oom_killed=True)) \
        .confirmed  # the payload itself may have been what ran out of memory
    started = lines(nonce, {"phase": "import", "ok": True}, {"phase": "baseline", "ok": True},
                    {"phase": "payload", "ok": True})
    assert judge_probe(exhaust, nonce, ProbeResult(exit_code=None, stdout=started, timed_out=True)).confirmed
    only_import = lines(nonce, {"phase": "import", "ok": True})
    assert not judge_probe(exhaust, nonce, ProbeResult(exit_code=None, stdout=only_import, timed_out=True)).confirmed


async def test_a_sink_in_a_function_without_parameters_is_not_probed(attack: AttackRunner) -> None:
    from app.review.red import BanditSource

    source = '"""Main."""\nimport sys\n\n\ndef main():\n    return eval(sys.argv[1])\n'
    analysis, agent, sandbox = await attack({"shop/cli.py": source}, sources=[BanditSource()])
    assert [(f.severity, f.confirmed, f.cwe) for f in analysis.findings] == [("low", False, "CWE-95")]
    assert sandbox.probes == [] and agent.last_search is None


async def test_output_without_a_newline_does_not_hide_the_markers(attack: AttackRunner) -> None:
    source = ('"""Noisy."""\nimport os\nimport sys\n\n\ndef run(cmd):\n    sys.stdout.write("no newline")\n'
              '    os.system("echo " + cmd)\n')
    analysis, _agent, _sandbox = await attack({"shop/noisy.py": source})
    assert [(f.severity, f.confirmed) for f in analysis.findings] == [("critical", True)]


def test_the_sql_oracle_reads_the_payload_as_syntax_or_as_a_value() -> None:
    from checks.red.probes import sql_injected

    tautology = "q1' OR 'q1'='q1"
    assert sql_injected("SELECT id FROM t WHERE n = 'q1' OR 'q1'='q1'", tautology)
    assert not sql_injected("SELECT id FROM t WHERE n = 'q1'' OR ''q1''=''q1'", tautology)  # escaped
    assert not sql_injected("SELECT id FROM t WHERE n = ?", tautology)  # parameterised
    assert sql_injected("SELECT id FROM t WHERE n = 'q1''", "q1'")  # the literal never closes
    assert not sql_injected("SELECT id FROM t WHERE n = 'q1'''", "q1'")
    assert sql_injected("SELECT * FROM t WHERE id = 0 OR 0=0 /*q1*/", "0 OR 0=0 /*q1*/")
    assert not sql_injected("SELECT * FROM t WHERE id = '0 OR 0=0 /*q1*/'", "0 OR 0=0 /*q1*/")
    assert sql_injected('SELECT * FROM "q1""', 'q1"')


async def test_sql_injection_behind_a_swallowed_error_is_confirmed(attack: AttackRunner) -> None:
    source = ('"""Users."""\nimport sqlite3\n\n\ndef find(name):\n    conn = sqlite3.connect(":memory:")\n'
              '    try:\n        return conn.execute(f"SELECT id FROM users WHERE name = \'{name}\'").fetchall()\n'
              '    except sqlite3.Error:\n        return []\n')
    analysis, _agent, _sandbox = await attack({"shop/users.py": source})
    assert [(f.severity, f.confirmed) for f in analysis.findings] == [("high", True)]
    assert "reached the SQL as syntax" in (analysis.findings[0].effect or "")


def watched(repo: Path, steps: str, *front: Path) -> list[Any]:
    """Run ``steps`` (Python, ending in ``print(json.dumps(...))``) in a fresh interpreter whose audit hook is a
    :class:`~checks.red.sightings.Sightings` of ``repo``, ``repo`` importable (after ``front``); what it printed."""
    import subprocess
    import sys

    from checks.red import sightings

    program = ("import json, sys\nsys.path.insert(0, sys.argv[1])\nfrom sightings import Sightings\n"
               "watch = Sightings(sys.argv[2])\nsys.path[:0] = sys.argv[3:] + [sys.argv[2]]\n" + steps)
    out = subprocess.run([sys.executable, "-I", "-c", program, str(Path(sightings.__file__).parent), str(repo),
                          *map(str, front)], cwd=repo, capture_output=True, text=True, check=True).stdout
    return list(json.loads(out))


def package(root: Path, module: str, source: str) -> None:
    """``root/pkg/<module>.py`` holding ``source``, ``pkg`` a package."""
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / f"{module}.py").write_text(source)


def test_the_audit_hook_sees_string_built_code_but_not_the_standard_librarys_own(tmp_path: Path) -> None:
    package(tmp_path, "mod", (
        "import builtins, timeit\nfrom collections import namedtuple\nfrom dataclasses import dataclass\n\n"
        "P = namedtuple('P', 'a b')\n\n\n@dataclass\nclass A:\n    x: int = 1\n\n\n"
        "def run(text):\n    return getattr(builtins, 'ev' + 'al')(text)\n\n\n"
        "def timed(text):\n    return timeit.timeit(text, number=1)\n"))
    at_import, called = watched(tmp_path, "import pkg.mod\nat_import = watch.take()\npkg.mod.run('abs(-1)')\n"
                                "pkg.mod.timed(\"__import__('os').system('true')\")\n"
                                "print(json.dumps([at_import, watch.take()]))\n")
    assert at_import == []  # a namedtuple and a dataclass build code, but not from the caller's data
    # timeit's template only defines a function (not recorded); what that function runs is, at the caller's line
    assert [(s["event"], s["line"]) for s in called] == [("exec", 14), ("os.system", 18)]


def test_code_an_installed_library_generates_for_itself_is_not_the_project_s_but_the_project_s_own_is(
        tmp_path: Path) -> None:
    """typing_inspection (imported by every pydantic model) builds functions with exec at import: an honest
    project defining pydantic models was 'code injection confirmed'. A library's own generated code is not
    recorded; code the repository runs from a string is, even from a folder it names site-packages."""
    library = tmp_path / "venv" / "lib" / "python3" / "site-packages" / "genlib"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text("def make():\n    space = {}\n    exec('def f():\\n    return 1\\n', space)\n"
                                         "    return space['f']\n")
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "models.py").write_text("import genlib\n\nF = genlib.make()\n")
    (repo / "site-packages").mkdir()
    (repo / "site-packages" / "hidden.py").write_text("def run(text):\n    return eval(text)\n")
    at_import, called = watched(repo, "import pkg.models\nat_import = watch.take()\nimport hidden\n"
                                "hidden.run('abs(-1)')\nprint(json.dumps([at_import, watch.take()]))\n",
                                library.parent, repo / "site-packages")
    assert at_import == []
    assert [(s["event"], s["path"], s["line"]) for s in called] == [("exec", "site-packages/hidden.py", 2)]


def test_a_string_annotation_typing_evaluates_is_not_code_injection_but_a_payload_through_it_is(
        tmp_path: Path) -> None:
    """pydantic-settings#940: with ``from __future__ import annotations`` a pydantic model's annotations are
    strings that ``typing.ForwardRef`` evaluates with ``eval`` while the model is defined (the sandbox's pydantic
    does it at import): an honest PR was 'code injection confirmed'. An annotation is not recorded; a payload
    handed to the same evaluator is."""
    package(tmp_path, "models", (
        "from __future__ import annotations\n\nimport typing\nfrom typing import Annotated, Optional\n\n\n"
        "def positive(x):\n    return x\n\n\n"
        "class Settings:\n    name: Optional[str]\n    sizes: dict[str, list[int]] | None\n"
        "    limit: Annotated[int, positive(1)]\n\n\n"
        "HINTS = typing.get_type_hints(Settings, include_extras=True)\n\n\n"
        "def hint(text):\n    try:\n        return typing.ForwardRef(text)._evaluate(globals(), None, frozenset())\n"
        "    except Exception:  # not a type: evaluated all the same\n        return None\n"))
    at_import, dunder, builtin = watched(
        tmp_path, "import pkg.models\nat_import = watch.take()\n"
        "assert pkg.models.HINTS['name'] == pkg.models.Optional[str]\n"
        "pkg.models.hint(\"__import__('os').getcwd()\")\ndunder = watch.take()\n"
        "pkg.models.hint('getattr(typing, \"Any\")')\nprint(json.dumps([at_import, dunder, watch.take()]))\n")
    assert at_import == []
    assert [(s["event"], s["path"], s["line"]) for s in dunder] == [("exec", "pkg/models.py", 22)]
    assert [(s["event"], s["path"], s["line"]) for s in builtin] == [("exec", "pkg/models.py", 22)]


def test_a_string_literal_the_project_executes_is_not_injected_code_but_a_formatted_one_is(tmp_path: Path) -> None:
    """six defines ``reraise`` with ``exec_("def reraise(...)")`` at import: a literal of its own file, not data;
    an honest six PR was 'code injection confirmed'. Code formatted from a value, or handed in, is still seen."""
    package(tmp_path, "compat", (
        "import builtins\n\nexec_ = getattr(builtins, 'exec')\n\n"
        "exec_('''def reraise(tp, value, tb=None):\n    raise value\n''')\n\n\n"
        "def formatted(name):\n    exec_('%s = abs(-1)' % name, {})\n\n\n"
        "def handed(text):\n    exec_(text, {})\n"))
    at_import, called = watched(tmp_path, "import pkg.compat\nat_import = watch.take()\n"
                                "pkg.compat.formatted('x')\npkg.compat.handed('y = abs(2)')\n"
                                "print(json.dumps([at_import, watch.take()]))\n")
    assert at_import == []
    assert [(s["event"], s["path"], s["line"]) for s in called] == [("exec", "pkg/compat.py", 11),
                                                                     ("exec", "pkg/compat.py", 15)]


def test_methods_generated_from_a_template_at_import_are_not_injected_code_but_statements_are(
        tmp_path: Path) -> None:
    """alembic#1769 ("fix typos") got `fail`: alembic builds its proxy methods at import with
    ``exec("def %(name)s(%(args)s): ..." % ...)``, which only defines functions. Code that does something at its
    top level (a call, an import) is still recorded, and so is what a generated function runs."""
    package(tmp_path, "proxies", (
        "import os\n\nTEMPLATE = 'def %(name)s(%(args)s):\\n    %(doc)r\\n    return _proxy.%(name)s(%(args)s)\\n'\n"
        "\n\ndef make(name, args='x, y=None'):\n    space = {}\n"
        "    exec(TEMPLATE % {'name': name, 'args': args, 'doc': name.__doc__}, {'_proxy': os}, space)\n"
        "    return space[name]\n\n\nGETCWD = make('getcwd', args='')\n\n\n"
        "def run(text):\n    exec(text, {})\n\n\ndef call(name, value):\n    return make(name, args='value')(value)\n"))
    at_import, statement, generated = watched(
        tmp_path, "import pkg.proxies\nat_import = watch.take()\npkg.proxies.run(\"import os\\nos.getpid()\")\n"
        "statement = watch.take()\npkg.proxies.call('system', 'true')\n"
        "print(json.dumps([at_import, statement, watch.take()]))\n")
    assert at_import == []
    assert [(s["event"], s["line"]) for s in statement] == [("exec", 16)]
    assert [(s["event"], s["line"]) for s in generated] == [("os.system", 20)]
