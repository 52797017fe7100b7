"""Races on files: a file read and written again by one call, confirmed by driving the call from processes."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

from checks.red.hypotheses import RACE_KIND
from tests.red.conftest import Attack
from tests.red.fixtures import write_repo
from tests.red.test_race import _probe

VISITS = '''"""Counts the visits of the site in one file."""
import os


class Visits:
    def __init__(self, path: str = "visits.txt") -> None:
        self.path = path

    def record(self) -> int:
        count = 0
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as stored:
                count = int(stored.read() or 0)
        with open(self.path, "w", encoding="utf-8") as stored:
            stored.write(str(count + 1))
        return count + 1
'''
RECORD = "    def record(self) -> int:\n"
_HEAD, _BODY = VISITS.split(RECORD)
# the same method, its whole body under an exclusive lock on a file beside the counter
LOCKED_VISITS = (_HEAD.replace("import os\n", "import fcntl\nimport os\n") + RECORD
                 + '        with open(self.path + ".lock", "a") as guard:\n'
                 + "            fcntl.flock(guard, fcntl.LOCK_EX)\n" + textwrap.indent(_BODY, "    "))
STATED = "The visit counter is shared by the server's worker processes."


async def test_a_file_read_and_written_again_by_processes_is_a_lost_update(attack: Attack, tmp_path: Path) -> None:
    """Processes share files, not memory: the counter is read and written again by every call, and processes
    released together while each yields in the module lose updates that 32 calls one after another never lose."""
    analysis, _agent, _sandbox = await attack({"web/visits.py": VISITS}, body=STATED)
    (race,) = [f for f in analysis.findings if f.id.startswith(RACE_KIND)]
    assert race.confirmed and race.severity == "high", race.effect
    assert race.effect is not None, race
    assert race.effect.startswith(("results no sequential order gives", "a lost update: visits.txt holds")), race.effect
    assert "8 processes × 4 calls" in race.effect
    # the reproducer shows it outside LogoMesh: forked processes, each run in a directory of its own
    assert race.reproducer is not None and "os.fork()" in race.reproducer
    repo = write_repo(tmp_path / "again", {"web/visits.py": VISITS})
    shown = subprocess.run([sys.executable, "-c", race.reproducer], cwd=repo, capture_output=True, text=True,
                           timeout=60, check=True).stdout
    alone, together = (ast.literal_eval(line.split(":", 1)[1].strip()) for line in shown.splitlines())
    assert alone == {**{str(n): 1 for n in range(1, 33)}, "files": {"visits.txt": "32"}}
    assert together["files"] != {"visits.txt": "32"}


async def test_a_file_taken_under_a_file_lock_is_no_race(attack: Attack, tmp_path: Path) -> None:
    analysis, _agent, _sandbox = await attack({"web/visits.py": LOCKED_VISITS}, body=STATED)
    assert not [f for f in analysis.findings if f.id.startswith(RACE_KIND)]
    # probed all the same (as if the static pass had missed the lock): the processes take turns, the count holds
    fixed = await _probe(tmp_path, {"web/visits.py": LOCKED_VISITS}, "web/visits.py", "Visits.record",
                         sink="file:self.path")
    assert not fixed.confirmed and fixed.effect.startswith("no race seen"), fixed.effect
    bare = await _probe(tmp_path, {"web/visits.py": VISITS}, "web/visits.py", "Visits.record",
                        sink="file:self.path")
    assert bare.confirmed, bare.effect


TAGS = '''"""Tags kept in a JSON file, replaced whole on every change."""
import json
import os


def tag(name: str, path: str = "tags.json") -> None:
    tags = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as stored:
            tags = json.load(stored)
    tags.append(name)
    fresh = f"{path}.{os.getpid()}"
    with open(fresh, "w", encoding="utf-8") as written:
        json.dump(tags, written)
    os.replace(fresh, path)
'''


async def test_a_file_replaced_whole_loses_what_another_process_added(tmp_path: Path) -> None:
    """Each call returns nothing, so only the file tells: a process that read the list before another replaced
    it writes its own list back, and tags added in between are lost (an atomic replace, from a file of each
    process's own, is no lock)."""
    found = await _probe(tmp_path, {"web/tags.py": TAGS}, "web/tags.py", "tag", sink="file:path")
    assert found.confirmed, found.effect
    assert found.effect.startswith("a lost update: tags.json holds '[\"k\""), found.effect
    assert "after every sequential order '[\"k\", \"k\"" in found.effect


ENDS_IN_A_CHILD = '''"""Keeps a count in a file, and ends any process but the one that loaded it."""
import os

LOADED_BY = os.getpid()


def bump(path: str = "count.txt") -> None:
    if os.getpid() != LOADED_BY:
        os._exit(3)
    count = int(open(path).read()) if os.path.exists(path) else 0
    with open(path, "w") as stored:
        stored.write(str(count + 1))
'''


async def test_a_process_that_dies_before_it_reports_confirms_nothing(tmp_path: Path) -> None:
    """A process the code ends (or the kernel kills: 8 at once hold more memory than one) tells nothing of its
    calls: missing results are not taken for a race, the way is left uncompared and the probe says why."""
    found = await _probe(tmp_path, {"web/count.py": ENDS_IN_A_CHILD}, "web/count.py", "bump", sink="file:path")
    assert not found.confirmed, found.effect
    assert "process(es) died before they reported" in found.effect, found.effect
