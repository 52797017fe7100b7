"""Races on objects only the project's tests can build: the race probe records the receiver and arguments of the
target's first call in a test (the tests run under pytest in the probe's process) and drives them from threads."""

from __future__ import annotations

from pathlib import Path

from checks.red.race import judge_race, with_recorded
from tests.red.test_race import _probe

CONSOLE = '''"""A console that records what it prints, to export it once."""
import io
import threading


class Segment:
    def __init__(self, text: str, style: str = "") -> None:
        self.text, self.style = text, style


class Console:
    def __init__(self, record: bool = False) -> None:
        self.record = record
        self.file = io.StringIO()
        self._buffer: list[Segment] = []
        self._lock = threading.RLock()
        self.render_hook = lambda segment: segment  # a local function: shared as it is, not copied

    def print(self, *segments: Segment) -> None:
        for segment in segments:
            self.file.write(segment.text)
            if self.record:
                self._buffer.append(self.render_hook(segment))

    def export_text(self, clear: bool = True) -> str:
        text = "".join(segment.text for segment in self._buffer)
        if clear:
            del self._buffer[:]
        return text
'''
LOCKED_CONSOLE = CONSOLE.replace('''        text = "".join(segment.text for segment in self._buffer)
        if clear:
            del self._buffer[:]
        return text''', '''        with self._lock:
            text = "".join(segment.text for segment in self._buffer)
            if clear:
                del self._buffer[:]
            return text''')
# the console's content comes from calls whose arguments are objects: no literal call builds it
CONSOLE_TESTS = '''from term.console import Console, Segment


def test_print_writes_to_the_file():
    console = Console()
    console.print(Segment("a"))
    assert console.file.getvalue() == "a"


def test_export_text_clears_the_record():
    console = Console(record=True)
    console.print(Segment("hello ", "bold"), Segment("world"))
    assert console.export_text() == "hello world"
    assert console.export_text() == ""
'''


async def test_a_receiver_the_tests_build_is_recorded_and_its_race_confirmed(tmp_path: Path) -> None:
    """From literals the console records nothing (every export returns ""): the race shows only on the console
    the test fills, whose text two exports together both return."""
    files = {"term/console.py": CONSOLE, "tests/test_console.py": CONSOLE_TESTS}
    bare = await _probe(tmp_path, files, "term/console.py", "Console.export_text")
    assert bare.confirmed, bare.effect
    assert bare.effect.startswith(("a limit exceeded", "results no sequential order gives")), bare.effect
    assert "on the object tests/test_console.py::test_export_text_clears_the_record builds" in bare.effect
    assert bare.reproducer is None  # a test's object is no literal a script could rebuild
    # under its lock (a lock of the recording is a new lock in each run): no race
    fixed = await _probe(tmp_path, {**files, "term/console.py": LOCKED_CONSOLE}, "term/console.py",
                         "Console.export_text")
    assert not fixed.confirmed, fixed.effect
    assert "on the object the tests build (tests/test_console.py::test_export_text_clears_the_record): no race " \
           "seen" in fixed.effect, fixed.effect


async def test_without_a_test_that_calls_it_nothing_is_recorded(tmp_path: Path) -> None:
    files = {"term/console.py": CONSOLE, "tests/test_console.py": CONSOLE_TESTS.split("\n\n\ndef test_export")[0]}
    outcome = await _probe(tmp_path, files, "term/console.py", "Console.export_text")
    assert not outcome.confirmed
    assert "no test of 1 file(s) naming export_text or Console called it" in outcome.effect, outcome.effect


async def test_a_test_suite_that_exits_loses_no_report(tmp_path: Path) -> None:
    """The project's tests run in the probe's process: one that raises ``SystemExit`` fails as a test and the
    recording goes on; one that ends the process leaves the report of the subject built from literals, sent first."""
    first, rest = CONSOLE_TESTS.split("\n\n\n", 1)
    exits = first + "\n\n\ndef test_a_exit():\n    raise SystemExit(3)\n\n\n" + rest
    outcome = await _probe(tmp_path, {"term/console.py": CONSOLE, "tests/test_console.py": exits},
                           "term/console.py", "Console.export_text")
    assert outcome.confirmed, outcome.effect
    ends = first + "\n\n\ndef test_a_end():\n    import os\n    os._exit(0)\n\n\n" + rest
    outcome = await _probe(tmp_path, {"term/console.py": CONSOLE, "tests/test_console.py": ends},
                           "term/console.py", "Console.export_text")
    assert not outcome.confirmed
    assert outcome.effect.startswith("no race seen in 15 trial(s)") and "the tests build" not in outcome.effect


def test_the_judge_names_what_the_recorded_subject_showed() -> None:
    literal = {"trials": 5, "of": 5}
    recorded = {"trials": 5, "of": 5, "recorded_from": "tests/t.py::test_a"}
    confirmed, effect = judge_race(with_recorded(literal, recorded))
    assert not confirmed
    assert effect.endswith("; on the object the tests build (tests/t.py::test_a): no race seen in 5 trial(s)")
    confirmed, effect = judge_race(with_recorded(literal, {"note": "pytest is not installed"}))
    assert not confirmed and effect.endswith("; on the object the tests build: pytest is not installed")
    # a recorded report confirms only with the test that built its object named
    unnamed = with_recorded(literal, {"confirmed": "a lost update"})
    assert unnamed is not None and unnamed["recorded"]["test"] is None
    assert with_recorded({"confirmed": "x"}, {"confirmed": "y", "recorded_from": "t"}) == {"confirmed": "x"}


# the package binds the console class at import, and the class names itself in ``super``: after the probe reloads
# the module, the package's class is not the one the reloaded methods name
PACKAGE = "from term.console import Console, Segment\n"
BASED = CONSOLE.replace("class Console:\n    def __init__(self, record: bool = False) -> None:\n",
                        "class Screen:\n    def __init__(self) -> None:\n        self.width = 80\n\n\n"
                        "class Console(Screen):\n    def __init__(self, record: bool = False) -> None:\n"
                        "        super(Console, self).__init__()\n")
PACKAGE_TESTS = CONSOLE_TESTS.replace("from term.console import Console, Segment", "from term import Console, Segment")


async def test_the_tests_import_the_project_afresh(tmp_path: Path) -> None:
    assert "super(Console, self)" in BASED
    files = {"term/__init__.py": PACKAGE, "term/console.py": BASED, "tests/test_console.py": PACKAGE_TESTS}
    outcome = await _probe(tmp_path, files, "term/console.py", "Console.export_text")
    assert outcome.confirmed and "on the object tests/test_console.py::test_export_text" in outcome.effect, \
        outcome.effect


# a test that names neither the method nor its class: it reaches them through the module's functions
DUMPED = CONSOLE + '''

def recording() -> Console:
    return Console(record=True)


def dump(screen: Console) -> str:
    return screen.export_text()
'''
DUMP_TESTS = '''from term import console as terminal


def test_dump_returns_what_was_printed():
    screen = terminal.recording()
    screen.print(terminal.Segment("hi"), terminal.Segment(" there"))
    assert terminal.dump(screen) == "hi there"
'''


async def test_the_tests_importing_the_module_are_run_when_none_names_the_target(tmp_path: Path) -> None:
    files = {"term/console.py": DUMPED, "tests/test_dump.py": DUMP_TESTS}
    outcome = await _probe(tmp_path, files, "term/console.py", "Console.export_text")
    assert outcome.confirmed and "on the object tests/test_dump.py::test_dump_returns_what_was_printed builds" in \
        outcome.effect, outcome.effect
    alone = await _probe(tmp_path, {"term/console.py": DUMPED}, "term/console.py", "Console.export_text")
    assert "no test of the project names export_text or Console or imports console" in alone.effect, alone.effect


CHANNEL = '''"""A channel whose sends take turns under an asyncio lock."""
import asyncio


class Channel:
    def __init__(self, name: str) -> None:
        self.name = name
        self.sent: list[str] = []
        self.warmed = 0
        self._lock = asyncio.Lock()

    async def warm(self) -> None:
        async with self._lock:
            await asyncio.sleep(0)
            self.warmed += 1

    async def send(self, item: str) -> int:
        async with self._lock:
            await asyncio.sleep(0)
            self.sent.append(item)
            return len(self.sent)
'''
# two warm-ups wait for the lock together: it is bound to the test's event loop before the first send
CHANNEL_TESTS = '''import asyncio

from chan.channel import Channel


def test_a_send_after_the_warm_up():
    channel = Channel("orders")

    async def main():
        await asyncio.gather(channel.warm(), channel.warm())
        return await channel.send("a")

    assert asyncio.run(main()) == 1
'''


async def test_a_recorded_asyncio_lock_is_a_new_lock_of_the_run_s_loop(tmp_path: Path) -> None:
    """The recorded lock is bound to the test's event loop, which a task of the run's loop cannot wait for (a
    RuntimeError only when sends overlap): recorded as a new lock, the locked sends show no race."""
    files = {"chan/channel.py": CHANNEL, "tests/test_channel.py": CHANNEL_TESTS}
    outcome = await _probe(tmp_path, files, "chan/channel.py", "Channel.send")
    assert not outcome.confirmed, outcome.effect
    assert "on the object the tests build (tests/test_channel.py::test_a_send_after_the_warm_up): no race seen" \
        in outcome.effect, outcome.effect
    # without the lock the recorded sends still race
    unlocked = CHANNEL.replace("        async with self._lock:\n            await asyncio.sleep(0)\n"
                               "            self.sent.append(item)\n            return len(self.sent)",
                               "        count = len(self.sent) + 1\n        await asyncio.sleep(0)\n"
                               "        self.sent.append(item)\n        return count")
    assert unlocked != CHANNEL
    raced = await _probe(tmp_path, {**files, "chan/channel.py": unlocked}, "chan/channel.py", "Channel.send")
    assert raced.confirmed, raced.effect
