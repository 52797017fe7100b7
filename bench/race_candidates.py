"""Race-fix candidates: the commits of a mirrored project that the race corpus's selection rule picks.

The rule (written above the cases of ``bench/race_corpus.py`` it chose): every non-merge commit since 2019 on the
default branch whose diff adds a lock (``Lock()``/``RLock()``, ``with …lock``, ``.acquire()``) to non-test Python
code and whose message names a race, thread safety, atomicity or locking — not a deadlock, a leak or a removed
lock. A commit that only adds a new feature behind a lock is left out by reading it; this program lists what the
words alone pick, with the message's first line, for that reading.
Usage: ``PYTHONPATH=$PWD .venv/bin/python bench/race_candidates.py MIRROR…`` (``/work/.mirror/<owner>+<name>``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bench.race_corpus import git
from checks.detectives.doc_analyst import is_test_path

SINCE = "2019-01-01"
ADDS_LOCK = re.compile(r"R?Lock\(\)|\bwith\b[^\n]*lock|\.acquire\(", re.IGNORECASE)
NAMES_RACE = re.compile(r"\brac(e|es|y|ing)\b|thread[- ]?safe|thread[- ]safety|atomic|\block(s|ing|ed)?\b",
                        re.IGNORECASE)
NOT_A_RACE = re.compile(r"deadlock|\bleak|remov\w* (the |a |an )?(r?lock|locking)|\bunlock", re.IGNORECASE)


def adds_lock(mirror: Path, sha: str) -> bool:
    """Whether the commit's diff adds a lock to a Python file that is not a test."""
    path = ""
    for line in git(mirror, "show", "--format=", "-U0", sha).splitlines():
        if line.startswith("+++ "):
            path = line[len("+++ b/"):] if line.startswith("+++ b/") else ""
        elif line.startswith("+") and path.endswith(".py") and not is_test_path(path) and ADDS_LOCK.search(line):
            return True
    return False


def candidates(mirror: Path) -> list[tuple[str, str, str]]:
    """(sha, date, first line of the message) of every commit the rule picks, oldest first."""
    picked = []
    log = git(mirror, "log", "--no-merges", "--reverse", f"--since={SINCE}", "--format=%H%x00%cs%x00%B%x01")
    for entry in log.split("\x01"):
        if not entry.strip():
            continue
        sha, date, message = entry.strip().split("\x00", 2)
        if NAMES_RACE.search(message) and not NOT_A_RACE.search(message) and adds_lock(mirror, sha):
            picked.append((sha, date, message.strip().splitlines()[0]))
    return picked


def main(argv: list[str]) -> None:
    for arg in argv:
        mirror = Path(arg) / "repo" if (Path(arg) / "repo").is_dir() else Path(arg)
        for sha, date, title in candidates(mirror):
            print(f"{mirror.parent.name if mirror.name == 'repo' else mirror.name}\t{sha}\t{date}\t{title}")


if __name__ == "__main__":
    main(sys.argv[1:])
