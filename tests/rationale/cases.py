"""Build court cases straight from file contents (every line added), without a git repository."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from checks.models import Case, ChangedFile, Commit
from tests.rationale.labelled_changes import CHANGES, HARD_MISMATCHES, SHIFT, LabelledChange


def new_file_diff(path: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n"
            f"+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}")


def removed_file_diff(path: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"-{line}\n" for line in lines)
    return (f"diff --git a/{path} b/{path}\ndeleted file mode 100644\nindex 1111111..0000000\n--- a/{path}\n"
            f"+++ /dev/null\n@@ -1,{len(lines)} +0,0 @@\n{body}")


def moved_case(moves: Mapping[str, tuple[str, str]], title: str = "", body: str = "") -> Case:
    """A case that moves each ``{new path: (old path, text)}``: the old file removed, the new one added."""
    added = case_from_files({new: text for new, (_, text) in moves.items()}, title, body)
    removed = tuple(ChangedFile(path=old, status="removed") for old, _ in moves.values())
    diff = "".join(removed_file_diff(old, text) for old, text in moves.values())
    return added.model_copy(update={"files": added.files + removed, "diff": diff + added.diff})


def case_from_files(files: Mapping[str, str], title: str = "", body: str = "",
                    commit_messages: Sequence[str] = (), linked_issues: Sequence[str] = ()) -> Case:
    """A case in which every file of ``files`` is new at head."""
    changed = tuple(ChangedFile(path=path, status="added", added_lines=tuple(range(1, len(text.splitlines()) + 1)),
                                content=text) for path, text in sorted(files.items()))
    commits = tuple(Commit(sha=f"{i:040x}", author_name="A", author_email="a@example.com", message=m)
                    for i, m in enumerate(commit_messages, start=1))
    return Case(base_sha="0" * 40, head_sha="1" * 40, title=title, body=body, linked_issues=tuple(linked_issues),
                diff="".join(new_file_diff(p, t) for p, t in sorted(files.items())), files=changed, commits=commits)


def matching(change: LabelledChange) -> Case:
    return case_from_files(change["files"], change["title"], change["body"])


def mismatched(index: int) -> Case:
    """Change ``index`` under the description of the change SHIFT places further on."""
    other = CHANGES[(index + SHIFT) % len(CHANGES)]
    return case_from_files(CHANGES[index]["files"], other["title"], other["body"])


BY_ID = {change["id"]: change for change in CHANGES}


def hard_mismatches() -> list[Case]:
    """Each change of HARD_MISMATCHES under the description of a related change from the same product area."""
    return [case_from_files(BY_ID[code]["files"], BY_ID[desc]["title"], BY_ID[desc]["body"])
            for code, desc in HARD_MISMATCHES]
