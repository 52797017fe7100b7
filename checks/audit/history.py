"""RepoInvestigator (history) — commit cadence, message quality and authorship over the whole history.

What: reads every commit the edge collected (newest first, capped by the rubric's ``forensics.max_commits``)
and reports the span and cadence of the work, how many subjects are too short to say anything, giant and
empty commits, and who wrote it.
Why: a history that is one bulk upload, or a string of "wip" commits, is a fact about how the work was done
that a report cannot argue away.
Example: ``bulk-history: 5 of 6 commits fall within 10 minutes``.
"""

from __future__ import annotations

from checks.audit.models import HistoryCommit, RepoSnapshot
from checks.models import Evidence, Severity
from rubric import Rubric

ID = "git"
BULK_WINDOW_SECONDS = 600
BULK_SHARE = 0.8
DESCRIPTIVE_SHARE = 0.8
VAGUE_SUBJECTS = frozenset({"wip", "update", "updates", "fix", "fixes", "changes", "stuff", "commit", "initial",
                            "init", "test", "tmp", "misc", "minor"})


def _evidence(key: str, kind: str, summary: str, severity: Severity = "info", **facts: object) -> Evidence:
    return Evidence(id=f"{ID}.{key}", detective=ID, kind=kind, summary=summary, severity=severity, facts=dict(facts))


def _terse(commit: HistoryCommit, min_length: int) -> bool:
    subject = commit.subject
    return len(subject) < min_length or subject.lower().strip(".!: ") in VAGUE_SUBJECTS


def _largest_burst(times: list[int]) -> int:
    """The most commits that fall into any one window of BULK_WINDOW_SECONDS."""
    best = 0
    start = 0
    for end in range(len(times)):
        while times[end] - times[start] > BULK_WINDOW_SECONDS:
            start += 1
        best = max(best, end - start + 1)
    return best


def investigate_history(snapshot: RepoSnapshot, rubric: Rubric) -> list[Evidence]:
    rules = rubric.forensics
    commits = list(snapshot.commits[: rules.max_commits])
    if not commits:
        return [_evidence("history", "bulk-history", "The repository has no commit history to examine", "medium",
                          commits=0)]
    times = sorted(c.timestamp for c in commits)
    span_hours = round((times[-1] - times[0]) / 3600, 2)
    authors = sorted({f"{c.author_name} <{c.author_email}>" for c in commits})
    items = [
        _evidence("history", "commit-history",
                  f"{len(commits)} commit(s) over {span_hours:g} hour(s)"
                  + (" (history truncated)" if snapshot.history_truncated or len(snapshot.commits) > len(commits)
                     else ""),
                  commits=len(commits), span_hours=span_hours, first=times[0], last=times[-1], neutral=True),
        _evidence("authorship", "authorship", f"{len(authors)} author(s): " + ", ".join(authors),
                  authors=authors, per_author={a: sum(1 for c in commits
                                                      if f"{c.author_name} <{c.author_email}>" == a)
                                               for a in authors}, neutral=True),
    ]
    burst = _largest_burst(times)
    if len(commits) == 1:
        items.append(_evidence("cadence", "bulk-history", "The whole history is a single commit", "medium",
                               commits=1))
    elif burst / len(commits) >= BULK_SHARE:
        items.append(_evidence("cadence", "bulk-history",
                               f"{burst} of {len(commits)} commits fall within {BULK_WINDOW_SECONDS // 60} minutes",
                               "low", burst=burst, commits=len(commits)))
    else:
        items.append(_evidence("cadence", "commit-cadence",
                               f"Work spread over {span_hours:g} hour(s); at most {burst} commit(s) in any "
                               f"{BULK_WINDOW_SECONDS // 60}-minute window", burst=burst, commits=len(commits)))

    terse = [c for c in commits if _terse(c, rules.min_message_length)]
    if terse:
        items.append(_evidence("messages.terse", "terse-commit-message",
                               f"{len(terse)} of {len(commits)} commit subject(s) say little: "
                               + ", ".join(f"{c.sha[:8]} {c.subject!r}" for c in terse[:5]),
                               "low" if len(terse) / len(commits) < 0.5 else "medium",
                               commits=[c.sha[:12] for c in terse]))
    if (len(commits) - len(terse)) / len(commits) >= DESCRIPTIVE_SHARE:
        items.append(_evidence("messages", "descriptive-messages",
                               f"{len(commits) - len(terse)} of {len(commits)} commit subjects describe the change",
                               descriptive=len(commits) - len(terse)))
    giant = [c.sha[:12] for c in commits if c.insertions + c.deletions > rules.giant_commit_lines]
    if giant:
        items.append(_evidence("giant", "giant-commit",
                               f"{len(giant)} commit(s) change more than {rules.giant_commit_lines} lines", "low",
                               commits=giant))
    empty = [c.sha[:12] for c in commits if c.files_changed == 0]
    if empty:
        items.append(_evidence("empty", "empty-commit", f"{len(empty)} commit(s) change no file", "low",
                               commits=empty))
    return items
