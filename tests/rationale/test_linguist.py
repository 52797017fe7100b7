"""Files the base's .gitattributes marks generated or vendored (GitHub Linguist) are left out of R, by name."""

from __future__ import annotations

from pathlib import Path

from app.review.gitrepo import GitRepo, read_case
from checks.config import parse_repo_config
from checks.linguist import linguist_marks
from checks.rationale import build_code_chunks
from rubric import load_rubric
from tests.gitfixture import RepoBuilder

ATTRIBUTES = """# linguist
*.pb.py linguist-generated
api/schema/** linguist-generated=true
third/** linguist-vendored
other/ linguist-vendored
docs/** linguist-documentation
api/schema/keep.py -linguist-generated
[attr]binary -diff -merge -text
"""


def test_patterns_follow_gitattributes() -> None:
    marks = linguist_marks(ATTRIBUTES, ["pkg/msg.pb.py", "api/schema/a/b.py", "api/schema/keep.py", "third/x.py",
                                        "docs/guide.md", "pkg/main.py", "other/third/x.py"])
    assert marks == {"pkg/msg.pb.py": "generated", "api/schema/a/b.py": "generated", "third/x.py": "vendored",
                     "docs/guide.md": "documentation"}  # "other/" names a directory: nothing, as in git
    assert linguist_marks(None, ["a.py"]) == {}


def test_marked_files_are_left_out_of_r_and_only_the_base_can_mark(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "r")
    repo.commit("Start", {"pkg/__init__.py": "", ".gitattributes": "pkg/gen_*.py linguist-generated\n"})
    repo.branch("pr")
    body = "\n".join(f"def handler_{i}(request):\n    return render_template(request, 'page_{i}')\n"
                     for i in range(20))
    own = "pkg/gen_*.py linguist-generated\npkg/views.py linguist-generated\n"  # the change marks its own file
    repo.commit("Add handlers", {"pkg/gen_views.py": body, "pkg/views.py": body, ".gitattributes": own})
    case = read_case(GitRepo.open(repo.path), "main", "pr", config=parse_repo_config(None))
    assert case.linguist == {"pkg/gen_views.py": "generated"}  # the change's own .gitattributes does not count
    code = build_code_chunks(case, load_rubric(), "add page handlers")
    assert ("pkg/gen_views.py", "generated file (linguist-generated in .gitattributes)") in code.left_out
    paths = {c.path for c in code.chunks}
    assert "pkg/views.py" in paths and "pkg/gen_views.py" not in paths


def test_languages_logomesh_does_not_analyse_are_named_and_python_is_not() -> None:
    from checks.linguist import language, named_languages, unanalysed_code

    paths = ["web/app.ts", "web/ui.tsx", "cmd/main.go", "pkg/core.py", "pkg/core.pyi", "README.md", "setup.cfg"]
    foreign = unanalysed_code(paths)
    assert foreign == {"Go": ("cmd/main.go",), "TypeScript": ("web/app.ts", "web/ui.tsx")}
    assert named_languages(foreign) == "Go (1 file), TypeScript (2 files)"
    assert unanalysed_code(["pkg/core.py", "docs/index.rst", "pyproject.toml"]) == {}  # hostile twin: all readable
    assert language("docs/guide.md") == "Markdown" and language("Makefile") == "Makefile"


def test_tests_in_languages_logomesh_does_not_run_are_counted_and_python_tests_are_not() -> None:
    from checks.linguist import unrun_tests

    tree = ["src/sum.js", "src/sum.test.js", "src/__tests__/ui.tsx", "test/api.spec.ts", "calc/calc.go",
            "calc/calc_test.go", "tests/test_ops.py", "tests/conftest.py", "web/index.js"]
    assert unrun_tests(tree) == {"Go": 1, "JavaScript": 1, "TypeScript": 2}
    assert unrun_tests(["pkg/ops.py", "tests/test_ops.py", "src/index.js", "main.go"]) == {}
