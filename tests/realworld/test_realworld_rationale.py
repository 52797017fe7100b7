"""R on twenty real merged pull requests: no honest description is penalised, descriptions swapped between them
mostly are (the figure `bench/rationale_calibration.py` prints is the one to quote; this pins a floor)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.review.assembly import prepare
from app.review.embeddings import SentenceEmbedder, load_model, model_available
from app.review.gitrepo import GitRepo
from app.settings import load_settings
from checks.models import Case, DetectiveReport
from checks.rationale import measure_rationale
from rubric import load_rubric

FIXTURES = Path(__file__).parent / "fixtures"
PRS = json.loads((FIXTURES / "prs.json").read_text(encoding="utf-8"))


def penalised(report: DetectiveReport) -> bool:
    return any(e.kind == "intent-mismatch" for e in report.evidence)


@pytest.fixture(scope="module")
def cases(projects: Path) -> dict[str, Case]:
    settings = load_settings(sandbox="off", embedding="off", red_team="off", home=projects / ".lm")
    return {pr["id"]: prepare(GitRepo.open(str(projects / pr["repo"])), pr["base"], pr["head"], settings=settings,
                              title=pr["title"], body=pr["body"] or "").case for pr in PRS}


@pytest.fixture(scope="module")
def embedder() -> SentenceEmbedder:
    missing = model_available(None)
    assert missing is None, missing
    return SentenceEmbedder(load_model())


async def test_no_honest_description_of_a_real_merged_pr_is_penalised(
        cases: dict[str, Case], embedder: SentenceEmbedder) -> None:
    rubric = load_rubric()
    flagged = {i: (await measure_rationale(case, rubric, embedder)) for i, case in cases.items()}
    assert [i for i, report in flagged.items() if penalised(report)] == []
    ct1, ct5 = flagged["ct1"].semantic, flagged["ct5"].semantic
    assert ct1 is not None and ct5 is not None
    # short ones are measured where they name the code they change ("Fix #387: … in _DescriptorBase")
    assert ct1.measured and ct1.anchors_found == ("_descriptorbase",)
    # a docs typo fix ("docs: fix typo in `index.rst`") is not measured rather than R = 0 for an accurate title
    assert not ct5.measured and "typo-sized" in (ct5.reason or "")


async def test_descriptions_swapped_between_projects_are_penalised(
        cases: dict[str, Case], embedder: SentenceEmbedder) -> None:
    rubric = load_rubric()
    repo = {pr["id"]: pr["repo"] for pr in PRS}
    caught = measured = 0
    ids = sorted(cases)
    for n, i in enumerate(ids):
        # three descriptions of other projects per change (the bench measures all 380 pairs)
        for j in [k for k in ids[n + 1:] + ids[:n] if repo[k] != repo[i]][:3]:
            case, other = cases[i], cases[j]
            report = await measure_rationale(case.model_copy(update={"title": other.title, "body": other.body}),
                                             rubric, embedder)
            assert report.semantic is not None
            measured += report.semantic.measured
            caught += penalised(report)
    # the penalty needs evidence beyond a low R (untouched named code, or words the change never mentions), so a
    # few swaps whose words this change happens to hold go unpenalised: 42 of 48 measured when last run
    assert measured >= 40 and caught / measured >= 0.85, (caught, measured)


async def test_same_project_swaps_caught_by_what_the_change_is_in(
        cases: dict[str, Case], embedder: SentenceEmbedder) -> None:
    """A name in a hunk header's parameters or return type (``def loads(..., parse_float)``, ``-> TOMLDecodeError``)
    is not what the change is in, and ``index.rst`` is a file most docs changes touch: none of them anchors a
    description to a change that does not do what it says."""
    rubric = load_rubric()
    ct4 = cases["ct4"].model_copy(update={"title": cases["ct5"].title, "body": cases["ct5"].body})
    exempt = await measure_rationale(ct4, rubric, embedder)
    # "docs: fix typo in `index.rst`" over a change that does touch index.rst: a declared typo fix naming only a
    # file the change touches is exempt (a known limit: its R, 0.23, would have been penalised), and says so
    assert not penalised(exempt) and [e for e in exempt.evidence if e.id == "semantic.intent-exempt"]
    for code, words in (("tm2", "tm5"), ("tm3", "tm5"), ("tm5", "tm3")):
        other = cases[words]
        report = await measure_rationale(cases[code].model_copy(update={"title": other.title, "body": other.body}),
                                         rubric, embedder)
        sem = report.semantic
        assert sem is not None and sem.measured and sem.anchors_found == (), (code, words, sem)
        # the named code is not touched: the anchored threshold applies, and the penalty when R is under it
        assert sem.penalty_threshold == rubric.intent.anchored_threshold, (code, words, sem)
        assert penalised(report) == (sem.score is not None and sem.score < sem.penalty_threshold), (code, words)
        # tomli's "`TOMLDecodeError` …" over the parse_float change reads close to it (R 0.53): not penalised
        assert penalised(report) or (code, words) == ("tm5", "tm3"), (code, words, sem)
    # the honest ones keep their anchors: the change is in ``naturaldelta`` (header) and adds ``parse_float`` code
    hu5, tm5 = [await measure_rationale(cases[i], rubric, embedder) for i in ("hu5", "tm5")]
    assert hu5.semantic is not None and tm5.semantic is not None
    assert hu5.semantic.anchors_found == ("naturaldelta",) and tm5.semantic.anchors_found == ("parse_float",)


async def test_no_honest_title_is_called_a_mismatch_and_lying_ones_are(
        cases: dict[str, Case], embedder: SentenceEmbedder) -> None:
    rubric = load_rubric()
    for i, case in cases.items():
        report = await measure_rationale(case, rubric, embedder)
        assert not [e for e in report.evidence if e.kind == "title-mismatch"], i
    for i in ("hu5", "tm4", "id1"):
        lying = cases[i].model_copy(update={"title": "Fix typo in README"})
        report = await measure_rationale(lying, rubric, embedder)
        # the lying title is flagged: on its own when the body matches the change, else the whole description
        # names a README the change does not touch and R is under the threshold: the intent penalty
        assert [e for e in report.evidence if e.kind in ("title-mismatch", "intent-mismatch")], i
