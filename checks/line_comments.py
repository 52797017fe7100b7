"""The review's line comments: one per finding on a line the change added, said once, found again on the next push.

A finding is a fact with a location (a test that fails there, a banned call, an injection, a skip the change
adds). Facts on one line under one rule are one comment: a parametrized test that fails for four parameter sets
is named once with its parameter ids. Each comment says what is wrong in words, a precise hint, and, where
:mod:`checks.suggestions` is certain, a committable ```` ```suggestion ```` block.

Each comment carries a hidden marker with its **fingerprint**: rule + path + the line's text with its spacing
normalised (never its number, so a finding that only moves is the same finding). On the next push,
:func:`plan_sync` compares the fingerprints posted with those found: the same finding is not posted again (its
words are edited in place if they changed), a new one is posted, and one that is gone is edited to say it was
fixed at the new head (its suggestion taken out). Pure: the worker does the HTTP (``app/worker/publish.py``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from checks.fixes import AGGREGATES, PARAMETRIZED, fix_for, worst_first
from checks.models import Evaluation, Evidence
from checks.render import code, inline
from checks.suggestions import (
    placeholder_for,
    remove_added_skip,
    shell_argument_list,
    sql_parameters,
    yaml_safe_load,
)

ReviewMode = Literal["fail", "always", "never"]
"""When the App posts a review with line comments: ``fail`` (default) — when the verdict is ``fail``; ``always``
— whenever a finding is on a changed line; ``never``. Comments already posted are kept current (marked fixed)
whatever the mode, except ``never``."""

MAX_COMMENTS = 30  # per review: past this, the check run's annotations carry the rest
MAX_BODY = 4000
MAX_PARAMS = 8
MARKER = re.compile(r"<!-- logomesh:finding ([0-9a-f]{16})(?: ([a-z-]{1,40}))?( fixed)? -->")
# Kinds only a test run can see, and the one only the red agent can: a review that could not run them says
# nothing about whether such a finding is gone.
TEST_KINDS = ("test-", "tests-", "runtime-sink", "harness-hook", "surviving-mutant")
COMPARED = ("test-regressed", "test-new-failing", "test-tampered")
LEVELS = ("critical", "high", "medium", "low")

# CWE → a precise hint: what to write instead, not only what is wrong.
HINTS = {
    "CWE-89": "Pass the value as a query parameter (the driver's placeholder: `?` for sqlite3, `%s` for psycopg "
              "and MySQL drivers) instead of formatting it into the SQL: the driver then never reads it as SQL.",
    "CWE-78": "Pass the command as a list of arguments and drop `shell=True` (or `os.system`): no shell then "
              "reads the value, so `;`, `|` or `$(…)` in it stay plain text.",
    "CWE-502": "Load only plain data: `yaml.safe_load` or `json.loads`; never `pickle`, `marshal` or `yaml.load` "
               "on bytes a user can send.",
    "CWE-95": "Parse the value instead of running it: `int()`, `float()`, `json.loads` or `ast.literal_eval`.",
    "CWE-22": "Resolve the path and check it stays under the intended folder (`Path.resolve()` then "
              "`is_relative_to`) before opening it.",
    "CWE-798": "Remove the secret from the code, rotate it, and read it from the environment or a secret store.",
}
SKIP_HINT = "Remove the skip this change adds, or say in the pull request why the test cannot run."


@dataclass(frozen=True)
class LineComment:
    path: str
    line: int
    body: str  # with its marker
    fingerprint: str
    kind: str = ""  # the finding's evidence kind

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "body": self.body, "fingerprint": self.fingerprint,
                "kind": self.kind}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LineComment:
        return cls(str(data["path"]), int(data["line"]), str(data["body"]), str(data["fingerprint"]),
                   str(data.get("kind", "")))


def marker(fingerprint: str, kind: str = "", *, fixed: bool = False) -> str:
    return f"<!-- logomesh:finding {fingerprint}{' ' + kind if kind else ''}{' fixed' if fixed else ''} -->"


def fingerprint(rule: str, path: str, snippet: str) -> str:
    """Stable across pushes: the rule, the file and the line's text (spacing normalised), not its number."""
    text = "\x00".join((rule, path, " ".join(snippet.split())))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _rule(ev: Evidence) -> str:
    detail = ev.cwe or str(ev.facts.get("mechanism") or ev.facts.get("rule") or "")
    return f"{ev.kind}:{detail}" if detail else ev.kind


def _suggestion(ev: Evidence, lines: list[str], number: int, source: str) -> str | None:
    """The committable rewrite of line ``number`` for this finding, when :mod:`checks.suggestions` is certain."""
    line = lines[number - 1]
    if ev.kind == "harness-change" and ev.facts.get("mechanism") == "skip":
        return remove_added_skip(lines, number)
    if ev.cwe == "CWE-89":
        return sql_parameters(line, placeholder_for(source))
    if ev.cwe == "CWE-502":
        return yaml_safe_load(line)
    if ev.cwe == "CWE-78":
        return shell_argument_list(line)
    return None


def _hint(ev: Evidence, default: str) -> str:
    if ev.kind == "harness-change" and ev.facts.get("mechanism") == "skip":
        return SKIP_HINT
    return HINTS.get(ev.cwe or "", default)


def _subjects(names: Iterable[str]) -> str:
    """Test names, a parametrized test once with its parameter ids: ``t.py::test_x`` (parameters ``a``, ``b``)."""
    grouped: dict[str, list[str]] = {}
    for name in names:
        match = PARAMETRIZED.match(name)
        test, param = (match.group("test"), match.group("ids")) if match else (name, None)
        ids = grouped.setdefault(test, [])
        if param is not None and param not in ids:
            ids.append(param)
    parts = []
    for test, ids in grouped.items():
        part = code(test)
        if ids:
            shown = ", ".join(code(i, 60) for i in ids[:MAX_PARAMS])
            more = f" and {len(ids) - MAX_PARAMS} more" if len(ids) > MAX_PARAMS else ""
            part += f" (parameters {shown}{more})"
        parts.append(part)
    return "; ".join(parts)


def _body(group: list[Evidence], suggestion: str | None, print_: str) -> str:
    first = group[0]
    fix = fix_for(first)
    names = [n for n in (fix_for(ev).subject for ev in group) if n]
    title = fix.title
    if first.kind == "red-finding" and not first.facts.get("confirmed"):
        title = first.summary.split(":", 1)[0]  # e.g. "SQL injection (not confirmed)": not "exploited"
    head = f"**{inline(title, 200)}**"
    if names:
        head += f" — {_subjects(names)}"
    lines = [head]
    details = list(dict.fromkeys(fix_for(ev).detail for ev in group if fix_for(ev).detail != fix.title))
    if details:
        lines += ["", inline(details[0], 600) + (f" (and {len(details) - 1} more)" if len(details) > 1 else "")]
    hint = _hint(first, fix.hint)
    if hint:
        lines += ["", inline(hint, 400)]
    if suggestion is not None:
        fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", suggestion)), default=0) + 1)
        lines += ["", f"{fence}suggestion", suggestion, fence]
    text = "\n".join(lines)
    if len(text) > MAX_BODY - 60:
        text = "\n".join([lines[0], "", inline(hint, 400)]) if hint else lines[0]
    return f"{text}\n\n{marker(print_, first.kind)}"


def plan_line_comments(evaluation: Evaluation, changed: Mapping[str, Iterable[int]],
                       sources: Mapping[str, str]) -> list[LineComment]:
    """One comment per finding on a line the change added (``changed``: path → added line numbers; ``sources``:
    path → the file's text at head), worst first, facts on one line under one rule grouped."""
    added = {path: set(lines) for path, lines in changed.items()}
    compared = {ev.facts.get("name") for ev in evaluation.evidence if ev.kind in COMPARED}
    groups: dict[tuple[str, str, int], list[Evidence]] = {}
    for ev in worst_first(evaluation.evidence):
        where = ev.location
        if ev.kind in AGGREGATES or ev.severity not in LEVELS or where is None or where.line is None:
            continue
        if where.line not in added.get(where.path, set()) or where.path not in sources:
            continue
        if ev.kind == "test-failure" and ev.facts.get("name") in compared:
            continue  # the comparison with the base says the same failure more precisely
        groups.setdefault((_rule(ev), where.path, where.line), []).append(ev)
    out: list[LineComment] = []
    seen: set[str] = set()
    for (rule, path, number), group in groups.items():
        lines = sources[path].splitlines()
        if number > len(lines):
            continue
        print_ = fingerprint(rule, path, lines[number - 1])
        if print_ in seen:  # the same text twice in a file under one rule: one comment says it
            continue
        seen.add(print_)
        suggestion = _suggestion(group[0], lines, number, sources[path])
        out.append(LineComment(path, number, _body(group, suggestion, print_), print_, group[0].kind))
    return out[:MAX_COMMENTS]


@dataclass(frozen=True)
class Posted:
    """A line comment LogoMesh posted earlier, as the pull request's review comments list it."""

    id: int
    fingerprint: str
    fixed: bool
    body: str
    kind: str = ""


def read_posted(comment_id: int, body: str) -> Posted | None:
    match = MARKER.search(body)
    if match is None:
        return None
    return Posted(comment_id, match.group(1), bool(match.group(3)), body, match.group(2) or "")


def unmeasured(evaluation: Evaluation) -> frozenset[str]:
    """The finding kinds this review could not see (no test run, no red agent): their comments stay open."""
    kinds: set[str] = set()
    if evaluation.tests is None or evaluation.tests.status != "ran":
        kinds.update(TEST_KINDS)
    if any(ev.kind == "red-not-run" for ev in evaluation.evidence):
        kinds.add("red-finding")
    return frozenset(kinds)


@dataclass(frozen=True)
class SyncPlan:
    post: list[LineComment]  # new findings: one review
    edit: list[tuple[int, str]]  # comment id → new body: the same finding in new words, or a finding now fixed


def fixed_body(posted: Posted, head_sha: str) -> str:
    """The comment of a finding that is gone at ``head_sha``: its title kept, struck through; no suggestion."""
    title = posted.body.split("\n", 1)[0]
    return f"✅ Fixed in {head_sha[:12]}: ~~{title}~~\n\n{marker(posted.fingerprint, posted.kind, fixed=True)}"


def plan_sync(planned: list[LineComment], posted: Iterable[Posted], head_sha: str, *,
              post_new: bool, unseen: frozenset[str] = frozenset()) -> SyncPlan:
    """What to change on the pull request: post what is new (when ``post_new``), edit in place what is still
    there in other words, mark fixed what is gone — unless its kind is one this review could not see
    (``unseen``, from :func:`unmeasured`). A finding fixed earlier that comes back is posted again."""
    open_ = {p.fingerprint: p for p in posted if not p.fixed}
    wanted = {c.fingerprint: c for c in planned}
    post = [c for c in planned if c.fingerprint not in open_] if post_new else []
    edit = [(p.id, c.body) for fp, c in wanted.items() if (p := open_.get(fp)) is not None and p.body != c.body]
    edit += [(p.id, fixed_body(p, head_sha)) for fp, p in open_.items()
             if fp not in wanted and not (p.kind and p.kind.startswith(tuple(unseen)))]
    return SyncPlan(post, edit)


def wants_review(mode: ReviewMode, verdict: str) -> bool:
    """Whether new line comments are posted for this verdict."""
    return mode == "always" or (mode == "fail" and verdict == "fail")
