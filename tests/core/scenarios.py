"""Small PR-shaped repositories the core tests review: a clean change, an eval, a PR that claims too much."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from tests.gitfixture import RepoBuilder

BASE = {
    "calc/__init__.py": '"""A calculator."""\n',
    "calc/ops.py": '"""Arithmetic."""\n\n\ndef add(a, b):\n    return a + b\n',
    "tests/test_ops.py": "from calc.ops import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
}



class Scenario(TypedDict):
    title: str
    body: str
    commits: list[tuple[str, dict[str, str]]]


SCENARIOS: dict[str, Scenario] = {
    "clean": {
        "title": "Add subtraction to calc.ops",
        "body": "Adds `sub` to calc/ops.py with tests in tests/test_ops.py.",
        "commits": [
            ("Add sub() to calc.ops", {"calc/ops.py": BASE["calc/ops.py"] + "\n\ndef sub(a, b):\n    return a - b\n"}),
            ("Test sub()", {"tests/test_ops.py": BASE["tests/test_ops.py"]
                            + "\n\ndef test_sub():\n    from calc.ops import sub\n    assert sub(3, 2) == 1\n"}),
        ],
    },
    "eval": {
        "title": "Evaluate expressions",
        "body": "Adds an expression evaluator to calc/ops.py.",
        "commits": [
            ("Evaluate user expressions", {"calc/ops.py": BASE["calc/ops.py"]
                                           + "\n\ndef evaluate(expression):\n    return eval(expression)\n"}),
        ],
    },
    "shell": {
        "title": "Run a shell helper",
        "body": "Adds a helper that runs commands.",
        "commits": [
            ("Add run helper", {"calc/run.py": "import subprocess\n\n\ndef run(cmd):\n"
                                "    return subprocess.check_output(cmd, shell=True)\n"}),
        ],
    },
    "claims": {
        "title": "Harden the parser",
        "body": "Rewrites calc/parser.py and calc/lexer.py, adds unit tests. Fixes #41",
        "commits": [
            ("Update docs", {"README.md": "# calc\nA calculator.\n"}),
        ],
    },
}


def build(root: Path, name: str) -> Path:
    spec = SCENARIOS[name]
    repo = RepoBuilder(root / name)
    repo.commit("Initial calculator", BASE)
    repo.branch("pr")
    for message, files in spec["commits"]:
        repo.commit(message, files)
    return repo.path
