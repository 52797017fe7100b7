"""A history longer than the review reads is said, with the share read: never ``truncated: false``."""

from __future__ import annotations

from pathlib import Path

from app.review.gitrepo import GitRepo, read_case
from checks.config import parse_repo_config
from checks.detectives import RepoInvestigator
from rubric import load_rubric
from tests.gitfixture import RepoBuilder


def _history(tmp_path: Path, commits: int) -> GitRepo:
    repo = RepoBuilder(tmp_path / "r")
    repo.commit("Start", {"pkg/__init__.py": ""})
    repo.branch("pr")
    for i in range(commits):
        repo.commit(f"Step number {i} of the change", {f"pkg/m{i}.py": f"X = {i}\n"})
    return GitRepo.open(repo.path)


async def test_a_cut_history_is_reported_with_the_share_read(tmp_path: Path) -> None:
    git = _history(tmp_path, 5)
    case = read_case(git, "main", "pr", config=parse_repo_config(None))
    assert case.commits_total == 5 and len(case.commits) == 5
    rubric = load_rubric(None, {"forensics": {"max_commits": 3}})
    report = await RepoInvestigator().investigate(case, rubric)
    history = next(e for e in report.evidence if e.kind == "commit-history")
    assert history.facts["truncated"] is True and history.facts["commits"] == 5 and history.facts["read"] == 3
    assert history.summary.startswith("5 commit(s)") and "the newest 3 read" in history.summary
    capped = next(e for e in report.evidence if e.kind == "analysis-capped")
    assert capped.severity == "low" and "3 of 5 commits (60.0 %)" in capped.summary


async def test_a_whole_history_is_not_called_cut(tmp_path: Path) -> None:
    git = _history(tmp_path, 2)
    case = read_case(git, "main", "pr", config=parse_repo_config(None))
    report = await RepoInvestigator().investigate(case, load_rubric())
    history = next(e for e in report.evidence if e.kind == "commit-history")
    assert history.facts["truncated"] is False and history.facts["read"] == 2
    assert not [e for e in report.evidence if e.kind == "analysis-capped"]
