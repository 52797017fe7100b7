"""The taint pass: which sinks untrusted input reaches, and which look-alikes it leaves alone."""

from __future__ import annotations

import pytest

from checks.red.taint import TaintPass, enclosing_target


def kinds(source: str, network: tuple[str, ...] = ()) -> list[tuple[str, str | None, tuple[str, ...]]]:
    return [(h.kind, h.target.qualname if h.target else None, h.tainted)
            for h in TaintPass("m.py", source, network_modules=network).run()]


@pytest.mark.parametrize(("source", "expected"), [
    ("import os\ndef f(a, b):\n    os.system('ls ' + b)\n", [("command-injection", "f", ("b",))]),
    ("import subprocess as sp\ndef f(a):\n    cmd = 'x %s' % a\n    sp.Popen(cmd, shell=True)\n",
     [("command-injection", "f", ("a",))]),
    ("from subprocess import check_output\ndef f(a):\n    check_output(a, shell=True)\n",
     [("command-injection", "f", ("a",))]),
    ("import yaml\ndef f(doc):\n    return yaml.load(doc, Loader=yaml.Loader)\n",
     [("deserialization", "f", ("doc",))]),
    ("class Api:\n    def run(self, code):\n        exec(code)\n", [("code-injection", "Api.run", ("code",))]),
    ("def f(cur, table):\n    cur.execute('SELECT * FROM {}'.format(table))\n", [("sql-injection", "f", ("table",))]),
    ("from pathlib import Path\ndef f(name):\n    return (Path('data') / name).read_text()\n",
     [("path-traversal", "f", ("name",))]),
    ("import random\ndef reset_token():\n    return str(random.getrandbits(64))\n",
     [("weak-randomness", "reset_token", ())]),
    ("def walk(tree):\n    return [walk(c) for c in tree]\n", [("resource-exhaustion", "walk", ("tree",))]),
    ("import threading\nHITS = {}\ndef hit(k):\n    HITS[k] = HITS.get(k, 0) + 1\n",
     [("unlocked-shared-state", "hit", ())]),
    ("import threading\nclass C:\n    def hit(self, k):\n        with self.files[k]:\n"
     "            self.n[k] = self.n.get(k, 0) + 1\n", [("unlocked-shared-state", "C.hit", ())]),
    ("import sys\ndef main():\n    eval(sys.argv[1])\n", []),  # a source, but no parameter a probe can drive
])
def test_sinks_reached_by_untrusted_input(
        source: str, expected: list[tuple[str, str | None, tuple[str, ...]]]) -> None:
    assert kinds(source) == expected


@pytest.mark.parametrize("source", [
    "import subprocess, shlex\ndef f(a):\n    subprocess.run('ls ' + shlex.quote(a), shell=True)\n",
    "import subprocess\ndef f(a):\n    subprocess.run(['ls', a], shell=False)\n",
    "import os\ndef f(a):\n    os.system('ls /tmp')\n",
    "import yaml\ndef f(doc):\n    return yaml.load(doc, Loader=yaml.SafeLoader)\n",
    "def f():\n    return eval('1 + 1')\n",
    "def f(cur, n):\n    cur.execute('SELECT * FROM t WHERE n = ?', (n,))\n",
    "def f(cur, n):\n    cur.execute('SELECT * FROM t WHERE n = %d' % int(n))\n",
    "import os\ndef f(name):\n    return open(os.path.join('d', os.path.basename(name))).read()\n",
    "import random\ndef shuffle_deck(cards):\n    random.shuffle(cards)\n",
    "def walk(tree, depth):\n    return [walk(c, depth - 1) for c in tree] if depth else []\n",
    "import threading\nLOCK = threading.Lock()\nHITS = {}\ndef hit(k):\n    with LOCK:\n        HITS[k] = 1\n",
    "import threading\nclass C:\n    def hit(self, k):\n        with self._locks[k]:\n"
    "            self.n[k] = self.n.get(k, 0) + 1\n",  # one lock of a table of them
    "PASSWORD_FIELD = 'password'\nTOKEN_URL = 'https://example.com/token'\n",
    "import os\nAPI_KEY = os.environ['API_KEY']\n",
])
def test_clean_look_alikes_are_left_alone(source: str) -> None:
    assert kinds(source) == []


def test_hard_coded_secrets_by_name_or_by_shape() -> None:
    found = TaintPass("m.py", "api_key = 'Zx81kq02mmNc'\nheaders = {'x': 'AKIAABCDEFGHIJKLMNOP'}\n").run()
    assert [(h.kind, h.line) for h in found] == [("hardcoded-secret", 1), ("hardcoded-secret", 2)]


def test_network_use_only_when_the_rubric_forbids_it() -> None:
    source = "import requests\ndef f(url):\n    return requests.get(url, timeout=5)\n"
    assert kinds(source) == []
    assert kinds(source, network=("requests",)) == [("network-use", "f", ())]


def test_only_added_lines_and_syntax_errors() -> None:
    source = "import os\ndef f(a):\n    os.system(a)\n"
    assert TaintPass("m.py", source, added_lines=[1, 2]).run() == []
    assert len(TaintPass("m.py", source, added_lines=[3]).run()) == 1
    assert TaintPass("m.py", "def f(:\n").run() == []


def test_enclosing_target_for_a_scanner_line() -> None:
    source = "x = 1\nclass A:\n    def m(self, p, q=1):\n        return p\n"
    target = enclosing_target("m.py", source, 4)
    assert target is not None and (target.qualname, target.params, target.is_method) == ("A.m", ("p", "q"), True)
    assert enclosing_target("m.py", source, 1) is None


def file_races(source: str) -> list[tuple[str | None, str]]:
    return [(h.target.qualname if h.target else None, h.sink) for h in TaintPass("m.py", source).run()
            if h.kind == "unlocked-shared-state"]


COUNTER_FILE = ("import threading\nclass Store:\n    def add(self):\n        with open(self.path) as f:\n"
                "            n = int(f.read())\n        with open(self.path, 'w') as f:\n"
                "            f.write(str(n + 1))\n")


@pytest.mark.parametrize(("source", "expected"), [
    (COUNTER_FILE, [("Store.add", "file:self.path")]),
    ("import threading\nfrom pathlib import Path\ndef bump(path):\n    n = int(Path(path).read_text())\n"
     "    Path(path).write_text(str(n + 1))\n", [("bump", "file:path")]),
    ("import json, os, multiprocessing\ndef save(p, k):\n    data = json.load(open(p))\n    data[k] = 1\n"
     "    json.dump(data, open(p + '.tmp', 'w'))\n    os.replace(p + '.tmp', p)\n", [("save", "file:p")]),
    # under a file lock, appended to, only read, or in a module that uses neither threads nor processes
    (COUNTER_FILE.replace("    def add(self):\n", "    def add(self):\n        fcntl.flock(self.fd, fcntl.LOCK_EX)\n"),
     []),
    (COUNTER_FILE.replace("'w'", "'a'"), []),
    ("import threading\ndef read(p):\n    with open(p) as f:\n        return f.read()\n", []),
    (COUNTER_FILE.replace("import threading\n", ""), []),
])
def test_a_file_read_and_written_again_is_shared_state(source: str, expected: list[tuple[str, str]]) -> None:
    assert file_races(source) == expected
