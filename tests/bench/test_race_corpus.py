"""The pure parts of the race corpus bench: which functions of a fix are probed, and which commits its selection
rule picks (a tiny git repository; no probe runs)."""

from __future__ import annotations

from pathlib import Path

from tests.bench.test_review_corpus import BENCH, _script
from tests.gitfixture import RepoBuilder

corpus = _script(BENCH / "race_corpus.py")
candidates = _script(BENCH / "race_candidates.py")

BEFORE = '''import threading

_PROVIDER = None
_LOCK = threading.Lock()


def set_provider(provider):
    global _PROVIDER
    if _PROVIDER is None:
        _PROVIDER = provider


def flush():
    with _LOCK:
        pass


def reset():
    pass
'''
FIXED = '''import threading

from .once import Once

_PROVIDER = None
_ONCE = Once()
_LOCK = threading.Lock()


def _set_provider(provider):
    def set_it():
        global _PROVIDER
        _PROVIDER = provider

    _ONCE.do_once(set_it)


def set_provider(provider):
    _set_provider(provider)


def flush():
    with _LOCK:
        pass


def reset():
    flush()
'''
ONCE = '''import threading


class Once:
    def __init__(self):
        self._lock = threading.Lock()
        self._done = False

    def do_once(self, func):
        with self._lock:
            if not self._done:
                func()
                self._done = True
'''


def _added(before: str, after: str) -> set[int]:
    old = before.splitlines()
    return {number for number, line in enumerate(after.splitlines(), 1) if line not in old}


def test_a_function_the_fix_routes_through_a_locking_helper_it_adds_is_probed() -> None:
    """``set_provider`` takes no lock itself: it calls ``_set_provider``, new, which calls ``Once.do_once``, new
    and locking. ``reset``'s new call of ``flush`` (locking, but there before the fix) puts no lock the fix
    added on its path."""
    locking = corpus.locking_names([FIXED, ONCE], [BEFORE])
    assert locking == {"do_once", "_set_provider"}  # the new helpers only
    targets = [t.qualname for t in corpus.locked_targets("pkg/api.py", FIXED, _added(BEFORE, FIXED), locking)]
    assert targets == ["_set_provider", "set_provider"]
    assert corpus.locked_targets("pkg/api.py", FIXED, _added(BEFORE, FIXED)) == []


def test_the_selection_rule_picks_race_fixes_that_add_a_lock_to_code(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "project")
    repo.commit("Initial", {"pkg/cache.py": "CACHE = {}\n", "tests/test_cache.py": "def test(): pass\n"})
    locked = "import threading\nLOCK = threading.Lock()\nCACHE = {}\n"
    fix = repo.commit("Fix race in the cache\n\nTwo threads could fill it twice.", {"pkg/cache.py": locked})
    repo.commit("Make the test thread-safe", {"tests/test_cache.py": "import threading\nL = threading.Lock()\n"})
    repo.commit("Avoid a deadlock in the cache", {"pkg/cache.py": locked.replace("Lock()", "RLock()")})
    repo.commit("Document thread safety", {"README.md": "Thread-safe, with a Lock().\n"})
    repo.commit("Faster cache", {"pkg/cache.py": locked + "\ndef get(k):\n    with LOCK:\n        return CACHE[k]\n"})
    picked = candidates.candidates(repo.path / ".git")
    assert [(sha, title) for sha, _date, title in picked] == [(fix, "Fix race in the cache")]
