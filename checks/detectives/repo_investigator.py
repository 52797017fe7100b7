"""RepoInvestigator — the diff, the commit history and the AST of every changed Python file.

What: summarises the diff (files, lines added/removed, binary and symlinked files), reads the PR's commits
(count, authors, co-author trailers, empty, giant or terse commits) and checks every changed Python file
against the rubric's constraint set with :mod:`ast`, and every changed Go, JavaScript or TypeScript file (tests
aside) for its sinks with tree-sitter (:mod:`checks.languages.go_syntax`, :mod:`checks.languages.javascript_syntax`),
reporting exact ``file:line`` locations.
Why: architecture (A) is a fact, not an opinion; only violations on lines the change adds count against it,
so a PR is never blamed for code it did not write. A syntax error is evidence, never a crash; a file in a Python
this interpreter does not read (Python 2, or newer syntax: :mod:`checks.languages.python_dialect`) is named as not
analysed, never as a syntax error.
Example: ``app.py:3 calls eval() — eval() executes arbitrary code (CWE-95)``.
"""

from __future__ import annotations

import re

from checks.constraints import Violation, check_source, own_packages
from checks.detectives.registry import register
from checks.languages import go, javascript, python_dialect
from checks.languages.go_syntax import check_go
from checks.languages.javascript_syntax import check_javascript
from checks.models import Case, ChangedFile, DetectiveReport, Evidence, Location
from checks.protocols import CourtResources
from rubric import Rubric

ID = "repo"
CO_AUTHOR = re.compile(r"^co-authored-by:\s*(.+)$", re.IGNORECASE | re.MULTILINE)


class RepoInvestigator:
    cpu_bound = True  # parses only: the court runs it in a thread (checks/court.py)
    id = ID

    async def investigate(self, case: Case, rubric: Rubric) -> DetectiveReport:
        evidence: list[Evidence] = [_diff_summary(case)]
        evidence.extend(_forensics(case, rubric))
        own = own_packages(case.head_paths, [f.path for f in case.files if f.status == "added"])
        for changed in case.files:
            evidence.extend(_file_evidence(changed, rubric, own))
        return DetectiveReport(detective=ID, evidence=tuple(evidence))


def _diff_summary(case: Case) -> Evidence:
    added = sum(len(f.added_lines) for f in case.files)
    removed = sum(f.removed_count for f in case.files)
    by_status: dict[str, int] = {}
    for f in case.files:
        by_status[f.status] = by_status.get(f.status, 0) + 1
    return Evidence(
        id=f"{ID}.diff",
        detective=ID,
        kind="diff-summary",
        summary=f"{len(case.files)} file(s) changed, +{added} −{removed}",
        facts={
            "files": len(case.files),
            "lines_added": added,
            "lines_removed": removed,
            "by_status": dict(sorted(by_status.items())),
            "binary_files": sorted(f.path for f in case.files if f.is_binary),
            "symlinks": sorted(f.path for f in case.files if f.is_symlink),
            "paths": [f.path for f in case.files],
        },
    )


def _forensics(case: Case, rubric: Rubric) -> list[Evidence]:
    rules = rubric.forensics
    commits = case.commits[: rules.max_commits]
    total = max(case.commits_total or 0, len(case.commits))
    truncated = total > len(commits)
    authors = sorted({f"{c.author_name} <{c.author_email}>" for c in commits})
    co_authors = sorted({m.strip() for c in commits for m in CO_AUTHOR.findall(c.message)})
    empty = [c.sha[:12] for c in commits if c.files_changed == 0]
    giant = [c.sha[:12] for c in commits if c.insertions + c.deletions > rules.giant_commit_lines]
    terse = [c.sha[:12] for c in commits if len(c.subject) < rules.min_message_length]
    items = [
        Evidence(
            id=f"{ID}.history",
            detective=ID,
            kind="commit-history",
            summary=f"{total} commit(s) by {len(authors)} author(s)"
                    + (f" (the newest {len(commits)} read)" if truncated else ""),
            facts={
                "commits": total,
                "read": len(commits),
                "authors": authors,
                "co_authors": co_authors,
                "messages": [c.subject for c in commits],
                "truncated": truncated,
            },
        )
    ]
    if truncated:
        share = 100 * len(commits) / total
        items.append(Evidence(
            id=f"{ID}.history.capped", detective=ID, kind="analysis-capped", severity="low",
            summary=f"The history read {len(commits)} of {total} commits ({share:.1f} %), the newest: authors and "
                    "commit messages of the older ones are not part of this review",
            facts={"read": len(commits), "total": total}))
    for kind, shas, what, severity in (
        ("empty-commit", empty, "commit(s) change no file", "low"),
        ("giant-commit", giant, f"commit(s) change more than {rules.giant_commit_lines} lines", "low"),
        ("terse-commit-message", terse, f"commit message(s) shorter than {rules.min_message_length} characters",
         "low"),
    ):
        if shas:
            items.append(
                Evidence(
                    id=f"{ID}.history.{kind}",
                    detective=ID,
                    kind=kind,
                    summary=f"{len(shas)} {what}",
                    severity=severity,
                    facts={"commits": shas},
                )
            )
    return items


def _file_evidence(changed: ChangedFile, rubric: Rubric, own: frozenset[str] = frozenset()) -> list[Evidence]:
    if changed.status != "removed" and changed.not_analysed is not None:
        code = changed.path.endswith(".py")
        return [Evidence(
            id=f"{ID}.not-analysed:{changed.path}", detective=ID, kind="not-analysed",
            summary=f"{changed.path} was not analysed: {changed.not_analysed}"
                    + (" — Python code that no check has read" if code else ""),
            location=Location(path=changed.path), severity="high" if code else "info",
            facts={"reason": changed.not_analysed, "python": code})]
    if changed.status == "removed" or changed.content is None:
        return []
    if go.owns(changed.path) and not go.is_test_path(changed.path):
        found = check_go(changed.content)
        return _violations(changed, found) if found is not None else []
    if javascript.owns(changed.path) and not javascript.is_test_path(changed.path):
        found = check_javascript(changed.content, changed.path)
        return _violations(changed, found) if found is not None else []
    if not changed.path.endswith(".py"):
        return []
    report = check_source(changed.path, changed.content, rubric, own=own)
    if report.syntax_error is not None:
        line, message = report.syntax_error
        written_in = python_dialect.dialect(changed.content, message)
        if written_in is not None:  # read whole by the tolerant grammar: unread code, not broken code
            return [Evidence(
                id=f"{ID}.dialect:{changed.path}", detective=ID, kind="code-dialect",
                summary=f"{changed.path} was not analysed: it is {written_in} code, which LogoMesh's Python "
                        f"{python_dialect.here()} does not read ({message}) — its rules and sinks were not checked",
                location=Location(path=changed.path, line=line), severity="low",
                facts={"reason": f"{written_in} code", "python": True, "dialect": written_in})]
        return [
            Evidence(
                id=f"{ID}.syntax:{changed.path}",
                detective=ID,
                kind="syntax-error",
                summary=f"{changed.path} does not parse: {message}",
                location=Location(path=changed.path, line=line),
                severity="high",
                facts={"message": message},
            )
        ]
    return _violations(changed, report.violations)


def _violations(changed: ChangedFile, violations: tuple[Violation, ...]) -> list[Evidence]:
    """Each violation as evidence; only those on lines the change adds count against it."""
    added = set(changed.added_lines)
    items: list[Evidence] = []
    for v in violations:
        introduced = v.line is None or v.line in added or changed.status == "added"
        items.append(
            Evidence(
                id=f"{ID}.{v.category}:{v.rule}:{changed.path}:{v.line or 0}",
                detective=ID,
                kind="constraint-violation" if introduced else "preexisting-violation",
                summary=f"{v.symbol or v.rule}: {v.message}",
                location=Location(path=changed.path, line=v.line),
                severity=v.severity if introduced else "info",
                cwe=v.cwe,
                facts={
                    "rule": v.rule,
                    "category": v.category,
                    "symbol": v.symbol,
                    "security": v.security,
                    "rule_severity": v.severity,
                    "introduced": introduced,
                },
            )
        )
    return items


@register(ID, order=10, emits=("constraint-violation", "syntax-error", "not-analysed", "code-dialect",
                                "analysis-capped", "commit-history", "diff-summary"))
def build(resources: CourtResources) -> RepoInvestigator:
    return RepoInvestigator()
