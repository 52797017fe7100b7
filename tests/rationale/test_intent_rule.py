"""The intent penalty needs evidence that a description is about something else, never a low R alone: each piece
of the rule with an honest case (not penalised) and a hostile twin (still penalised)."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from app.review.embeddings import SentenceEmbedder
from checks.models import DetectiveReport
from checks.rationale import (
    ChangeShape,
    Familiarity,
    added_lines_by_path,
    build_intent,
    change_kind,
    change_shape,
    familiar_text,
    familiarity,
    kind_fits,
    measure_rationale,
    penalty_threshold,
    scopes_by_path,
    strip_boilerplate,
)
from rubric import Rubric
from tests.rationale.cases import case_from_files, moved_case


def penalised(report: DetectiveReport) -> bool:
    return any(e.kind == "intent-mismatch" for e in report.evidence)


# --- boilerplate -------------------------------------------------------------------------------------------


def test_pr_numbers_issue_references_and_trailers_are_not_intent() -> None:
    text = strip_boilerplate("Handle empty zstd responses (#3412)\n\nFixes #3401, see gh-12 and pallets/jinja#77\n"
                             "- [x] Added tests\n## Checklist\nMerge pull request #5 from someone/branch\n"
                             "Co-authored-by: Illia Volochii <illia.volochii@example.com>\n"
                             "Signed-off-by: A <a@example.com>")
    assert "#" not in text and "volochii" not in text.lower() and "Signed" not in text and "Added tests" not in text
    assert "Handle empty zstd responses" in text and "branch" not in text


def test_a_trailer_names_no_anchor_while_the_prose_still_does() -> None:
    case = case_from_files({"lib/url.py": "def parse_host(value):\n    return value\n"},
                           title="Reject invalid URL hosts (#5095)",
                           body="Calls `parse_host` first.\n\nCo-authored-by: Illia Volochii <iv@example.com>")
    intent = build_intent(case)
    assert "volochii" not in intent.anchors and "parse_host" in intent.anchors
    assert "5095" not in intent.text


def test_boilerplate_stripping_is_linear_on_hostile_text() -> None:
    assert strip_boilerplate("(#1" * 50_000 + "\n" + "Fixes " * 50_000).count("#") <= 50_000


# --- kinds of change -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("title", "kind"), [
    ("Move utility functions from _utils.py to _client.py (#3389)", "refactor"),
    ("Rename the loader", "refactor"),
    ("Bump cryptography from 41 to 42", "dependency"),
    ("fix typos in docstrings and comments", "documentation"),
    ("lint: enable flake8-bugbear and fix the issues it found (#931)", "style"),
    ("Address deprecation warnings in tests (#2252)", "compatibility"),
])
def test_a_title_declares_its_kind(rubric: Rubric, title: str, kind: str) -> None:
    assert change_kind(rubric, title) == kind


@pytest.mark.parametrize("title", ["Handle empty zstd responses", "Add proxy gateways", "Removement of movies",
                                   "Typology of bumpers"])
def test_a_title_that_declares_no_kind_gets_none(rubric: Rubric, title: str) -> None:
    # whole words only: "movies" is not "move", "bumpers" is not "bump"
    assert change_kind(rubric, title) is None


# --- the threshold that applies ------------------------------------------------------------------------------


def test_named_code_the_change_touches_is_never_penalised(rubric: Rubric) -> None:
    assert penalty_threshold(rubric, ("parse_host",), ("parse_host",), None, Familiarity(5, ("a", "b", "c", "d"))) \
        is None


def test_named_code_the_change_does_not_touch_applies_the_anchored_threshold_even_for_a_declared_kind(
        rubric: Rubric) -> None:
    # "Rename `spy_return_list`" on a change that has no spy_return_list is not a rename of this code
    assert penalty_threshold(rubric, ("spy_return_list",), (), "refactor", Familiarity(3, ("spy", "return"))) \
        == rubric.intent.anchored_threshold


def test_a_declared_kind_the_change_shows_and_naming_no_untouched_code_is_never_penalised(rubric: Rubric) -> None:
    strange = Familiarity(4, ("a", "b", "c", "d"))
    assert penalty_threshold(rubric, (), (), "refactor", strange, fits="a rewrite") is None
    # hostile twin: a kind nothing in the change shows exempts nothing; the description's words decide
    assert penalty_threshold(rubric, (), (), "refactor", strange, fits=None) == rubric.intent.threshold
    assert penalty_threshold(rubric, (), (), "refactor", Familiarity(4, ("a",)), fits=None) is None


SHAPE = ChangeShape(product_added=100, product_removed=10, prose_added=5, test_added=40, paths=("pkg/core.py",),
                    changed_lines="return total\n")


@pytest.mark.parametrize(("kind", "shown", "not_shown"), [
    ("refactor", replace(SHAPE, product_removed=90), SHAPE),
    ("typo", replace(SHAPE, product_added=12, product_removed=11), SHAPE),
    ("dependency", replace(SHAPE, paths=("pkg/core.py", "requirements/test.txt")), SHAPE),
    ("dependency", replace(SHAPE, paths=("pyproject.toml",)), replace(SHAPE, paths=("pkg/pyproject.py",))),
    ("style", replace(SHAPE, paths=("pkg/core.py", ".pre-commit-config.yaml")), SHAPE),
    ("compatibility", replace(SHAPE, changed_lines="if sys.version_info >= (3, 10):\n"), SHAPE),
    ("compatibility", replace(SHAPE, changed_lines="warnings.warn('x', DeprecationWarning)\n"), SHAPE),
    ("documentation", replace(SHAPE, prose_added=60), SHAPE),
    ("test suite", replace(SHAPE, test_added=300), SHAPE),
    ("test suite", replace(SHAPE, paths=("pkg/core.py", ".github/workflows/ci.yml")), SHAPE),
    ("test suite", replace(SHAPE, changed_lines="@pytest.mark.xfail(reason='#12')\n"), SHAPE),
])
def test_a_declared_kind_is_shown_by_the_change_or_exempts_nothing(kind: str, shown: ChangeShape,
                                                                   not_shown: ChangeShape) -> None:
    assert kind_fits(kind, shown) is not None
    assert kind_fits(kind, not_shown) is None


def test_the_shape_of_a_change_counts_product_prose_tests_and_removed_words() -> None:
    case = moved_case({"app/settings_io.py": ("app/helpers.py", RENAMED)})
    case = case.model_copy(update={"files": case.files + case_from_files({"tests/test_io.py": RENAMED_TEST}).files,
                                   "diff": case.diff + case_from_files({"tests/test_io.py": RENAMED_TEST}).diff})
    shape = change_shape(case, added_lines_by_path(case))
    assert shape.product_added == shape.product_removed > 0 and shape.test_added > 0
    assert 0 < shape.prose_added < shape.product_added  # the docstring
    assert kind_fits("refactor", shape) is not None and kind_fits("dependency", shape) is None


def test_a_generic_name_the_change_does_not_touch_is_no_evidence(rubric: Rubric) -> None:
    # CI and PR are names any project uses: "Try passing CI" on a change without "CI" says nothing
    assert penalty_threshold(rubric, ("CI", "PR"), (), None, Familiarity(4, ("suite",))) is None


def test_a_description_whose_words_the_change_lacks_applies_the_plain_threshold(rubric: Rubric) -> None:
    strange = Familiarity(6, ("proxy", "gateway", "socket", "remote", "spawn"))
    assert penalty_threshold(rubric, (), (), None, strange) == rubric.intent.threshold
    familiar = Familiarity(6, ("proxy",))
    assert penalty_threshold(rubric, (), (), None, familiar) is None
    # a short vague title ("Small improvements") says nothing: its words are not content words
    assert familiarity("Small improvements", "def load(path): pass").described == 0
    assert penalty_threshold(rubric, (), (), None, familiarity("Small improvements", "load path")) is None
    # two content words, and the change holds one: too little to show anything
    assert penalty_threshold(rubric, (), (), None, Familiarity(2, ("gateways",))) is None
    # hostile twin: none of them found ("Add proxy gateways" over a settings loader)
    assert penalty_threshold(rubric, (), (), None, Familiarity(2, ("proxy", "gateways"))) == rubric.intent.threshold


def test_words_of_a_pr_s_own_making_are_no_evidence_of_another_subject(rubric: Rubric) -> None:
    """cattrs#722, squash-merged with its commits as the body: "Working set fix / Add failing test / Implement the
    fix / Document the test". Only "set" says what it is about, and the change holds it."""
    change = "def structure_set(self, obj, cl):\n    return set(self._structure(e) for e in obj)\n"
    known = familiarity("Working set fix\nAdd failing test\nImplement the fix\nDocument the test", change)
    assert known.described == 1 and not known.unfamiliar
    assert penalty_threshold(rubric, (), (), None, known) is None
    # hostile twin: the same process words around a subject the change lacks are still unfamiliar
    other = familiarity("Implement proxy gateway retries\nAdd failing test for remote sockets", change)
    assert set(other.unfamiliar) == {"proxy", "gateway", "retries", "remote", "sockets"}
    assert penalty_threshold(rubric, (), (), None, other) == rubric.intent.threshold


def test_familiarity_compares_stems_with_the_change_text() -> None:
    known = familiarity("Parse zone tables and reject negative offsets", "def parsing_zones(table):\n offset")
    assert known.described == 6 and set(known.unfamiliar) == {"negative", "reject"}


def test_comments_that_repeat_a_description_do_not_make_it_familiar() -> None:
    honest = case_from_files({"shop/digest.py": "def weekly_digest(orders):\n    return sorted(orders)\n"})
    dressed = case_from_files({"shop/digest.py": "# webhook retry backoff jitter delivery\n"
                                                 "def weekly_digest(orders):\n"
                                                 '    """Webhook retry backoff with jitter."""\n'
                                                 "    return sorted(orders)  # delivery retries\n"})
    description = "Retry webhook delivery with exponential backoff and jitter"
    for case in (honest, dressed):
        text = familiar_text(case, added_lines_by_path(case), scopes_by_path(case))
        assert "webhook" not in text.lower() and "weekly_digest" in text
        assert len(familiarity(description, text).unfamiliar) >= 5


def test_a_declared_kind_naming_a_file_the_change_does_not_touch_is_not_exempt(rubric: Rubric) -> None:
    # "Fix typo in README" over a change that never touches a README: the typo kind does not apply
    assert penalty_threshold(rubric, ("README",), (), "typo", Familiarity(3, ("typo",))) \
        == rubric.intent.anchored_threshold
    assert penalty_threshold(rubric, ("README",), ("README",), "typo", Familiarity(3, ())) is None


# --- end to end with the real model --------------------------------------------------------------------------

RENAMED = textwrap.dedent('''\
    def load_settings(path):
        """Read the settings file at ``path``."""
        with open(path, encoding="utf-8") as handle:
            return parse_settings(handle.read())


    def parse_settings(text):
        pairs = [line.split("=", 1) for line in text.splitlines() if "=" in line]
        return {key.strip(): value.strip() for key, value in pairs}
    ''')
RENAMED_TEST = textwrap.dedent('''\
    from app.settings_io import load_settings


    def test_load_settings(tmp_path):
        target = tmp_path / "app.cfg"
        target.write_text("a = 1\\n")
        assert load_settings(target) == {"a": "1"}
    ''')
FILES = {"app/settings_io.py": RENAMED, "tests/test_settings_io.py": RENAMED_TEST}


MOVED = {"app/settings_io.py": ("app/helpers.py", RENAMED), "tests/test_settings_io.py": ("tests/test_helpers.py",
                                                                                          RENAMED_TEST)}
PYPROJECT = '[project]\nname = "app"\nrequires-python = ">=3.10"\ndependencies = ["tomli>=2"]\n'
CHANGELOG = "Changes\n=======\n\n1.4\n---\n\n- Settings files are read as UTF-8 on every platform.\n"


@pytest.mark.model
@pytest.mark.parametrize(("title", "body", "change"), [
    ("Refactor configuration helpers (#412)", "", "moved"),
    ("Move helpers into their own module (#413)", "Co-authored-by: B <b@example.com>", "moved"),
    ("Bump the minimum Python to 3.10", "See https://example.com/changelog", "pyproject"),
    ("docs: update changelog", "- [x] Added a changelog entry", "changelog"),
])
async def test_honest_refactor_rename_bump_and_changelog_prs_are_not_penalised(
        embedder: SentenceEmbedder, rubric: Rubric, title: str, body: str, change: str) -> None:
    case = (moved_case(MOVED, title, body) if change == "moved" else
            case_from_files({**FILES, "pyproject.toml": PYPROJECT}, title, body) if change == "pyproject" else
            case_from_files({"CHANGES.rst": CHANGELOG}, title, body))
    report = await measure_rationale(case, rubric, embedder)
    assert not penalised(report), [e.summary for e in report.evidence]
    exempt = next(e for e in report.evidence if e.id == "semantic.intent-exempt")
    assert exempt.facts["shown_by"]


@pytest.mark.model
@pytest.mark.parametrize(("title", "body"), [
    ("Bump the python-packages group with 4 updates (#924)", "Bumps the python-packages group with 4 updates."),
    ("Format using ruff", ""),
    ("🧪 test: deflake six scheduled-run failures (#704)", "Scheduled runs failed on six of them."),
])
async def test_a_declared_kind_the_change_does_not_show_exempts_nothing(
        embedder: SentenceEmbedder, rubric: Rubric, title: str, body: str) -> None:
    # the same titles over a settings loader that adds new code: no bump, no reformat, no test-suite change
    report = await measure_rationale(case_from_files({"app/settings_io.py": RENAMED}, title, body), rubric, embedder)
    assert penalised(report), [e.summary for e in report.evidence]
    mismatch = next(e for e in report.evidence if e.kind == "intent-mismatch")
    assert "which nothing in the change shows" in mismatch.summary and mismatch.facts["declared_kind"]


@pytest.mark.model
@pytest.mark.parametrize(("title", "body"), [
    # a description of a different change, naming code this one does not touch
    ("Add `spy_return_list` to the mocker fixture (#417)", "Records every return value of a spied callable."),
    # the same, but it cleverly mentions a generic word the change touches ("settings") and declares a refactor
    ("Refactor settings: route the `ProxyGateway` through remote sockets",
     "Spawns a gateway per remote host and multiplexes the sockets."),
    # names no code at all: its words are nowhere in the change
    ("Add proxy gateways for remote workers", "Workers spawn over ssh gateways and multiplex their channels."),
])
async def test_a_description_of_a_different_change_is_still_penalised(
        embedder: SentenceEmbedder, rubric: Rubric, title: str, body: str) -> None:
    report = await measure_rationale(case_from_files(FILES, title, body), rubric, embedder)
    assert report.semantic is not None and report.semantic.measured
    assert penalised(report), [e.summary for e in report.evidence]
    mismatch = next(e for e in report.evidence if e.kind == "intent-mismatch")
    assert "×" not in mismatch.summary and "the integrity score is reduced" in mismatch.summary


# --- code R cannot read ----------------------------------------------------------------------------------------

GO_FILES = {"settings/load.go": "package settings\n\n// Load reads the settings file.\nfunc Load(path string) "
                                "(*Settings, error) {\n\tdata, err := os.ReadFile(path)\n\tif err != nil {\n\t\t"
                                "return nil, err\n\t}\n\treturn Parse(data)\n}\n",
            "settings/load_test.go": "package settings\n\nfunc TestLoad(t *testing.T) {\n\tLoad(\"x.toml\")\n}\n"}
ELSEWHERE = ("Add proxy gateways for remote workers", "Workers spawn over ssh gateways and multiplex their channels.")


@pytest.mark.model
async def test_no_intent_penalty_on_code_logomesh_cannot_parse(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    report = await measure_rationale(case_from_files(GO_FILES, *ELSEWHERE), rubric, embedder)
    assert report.semantic is not None and report.semantic.penalty_threshold is None and not penalised(report)
    said = next(e for e in report.evidence if e.id == "semantic.intent-unanalysed")
    assert "Go (2 files)" in said.summary and said.facts["languages"] == "Go (2 files)"
    # hostile twins: the same description over a Python change, or a Python change beside the Go, is penalised
    assert penalised(await measure_rationale(case_from_files(FILES, *ELSEWHERE), rubric, embedder))
    assert penalised(await measure_rationale(case_from_files({**FILES, **GO_FILES}, *ELSEWHERE), rubric, embedder))


def test_a_library_attribute_the_change_never_mentions_names_other_code(rubric: Rubric) -> None:
    """jinja#1621's "use `posixpath.join` when loading template names" over a change that never mentions posixpath
    (tokenize-rt#192, fit half) is a description of other code; over a change that calls it, or that imports
    the name from its module, the attribute is as generic as any standard-library name (honest twins)."""
    from checks.rationale import absent_attributes, intent_anchors, library_attribute

    anchors = intent_anchors("use `posixpath.join` when loading template names")
    assert "posixpath.join" in anchors and library_attribute("posixpath.join")
    lacking = "def src_to_tokens(src: str) -> list[Token]:\n    return list(_tokenize(src))\n"
    absent = absent_attributes(anchors, lacking)
    assert absent == ("posixpath.join",)
    assert penalty_threshold(rubric, anchors, (), None, Familiarity(4, ("template",)), absent=absent) \
        == rubric.intent.anchored_threshold
    # honest: the change calls it, or imports the name from its module (every part is there)
    assert absent_attributes(anchors, "import posixpath\npieces.append(posixpath.join(a, b))\n") == ()
    assert absent_attributes(intent_anchors("accept any `typing.Callable`"),
                             "from typing import Callable\ndef f(cb: Callable) -> None: ...\n") == ()
    assert penalty_threshold(rubric, anchors, (), None, Familiarity(4, ("template",)), absent=()) is None
    # a file name is not an attribute, and a module alone is not one either
    assert not library_attribute("os") and not library_attribute("json.rst")
