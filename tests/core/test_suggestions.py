"""Committable suggestions: the certain rewrites are exact, and anything unsure gets no suggestion at all."""

from __future__ import annotations

import ast

import pytest

from checks.suggestions import (
    placeholder_for,
    remove_added_skip,
    shell_argument_list,
    sql_parameters,
    yaml_safe_load,
)


def _parses(line: str) -> None:
    ast.parse(line.strip())


@pytest.mark.parametrize(("line", "placeholder", "expected"), [
    ("    cur.execute(f\"SELECT * FROM users WHERE name = '{name}'\")", "?",
     "    cur.execute(\"SELECT * FROM users WHERE name = ?\", (name,))"),
    ("    cur.execute(f\"SELECT * FROM users WHERE name = '{name}'\")", "%s",
     "    cur.execute(\"SELECT * FROM users WHERE name = %s\", (name,))"),
    ("rows = conn.execute('SELECT * FROM t WHERE id = ' + uid).fetchall()", "?",
     "rows = conn.execute('SELECT * FROM t WHERE id = ?', (uid,)).fetchall()"),
    ("cur.execute(\"SELECT 1 FROM t WHERE a = '%s' AND b >= %s\" % (a, self.b))", "?",
     "cur.execute(\"SELECT 1 FROM t WHERE a = ? AND b >= ?\", (a, self.b))"),
    ("return db.execute(f\"SELECT * FROM t WHERE a = '{a}' LIMIT {n}\")  # page", "?",
     "return db.execute(\"SELECT * FROM t WHERE a = ? LIMIT ?\", (a, n))  # page"),
    ("cur.execute(f\"SELECT * FROM t WHERE nom = '{row['é']}'\")", "?",
     "cur.execute(\"SELECT * FROM t WHERE nom = ?\", (row['é'],))"),
])
def test_string_built_sql_becomes_a_parameter(line: str, placeholder: str, expected: str) -> None:
    assert sql_parameters(line, placeholder) == expected
    _parses(expected)


@pytest.mark.parametrize("line", [
    "cur.execute(f\"SELECT * FROM {table} WHERE a = 1\")",             # a table name cannot be a parameter
    "cur.execute(f\"SELECT * FROM t WHERE a LIKE '%{a}%'\")",          # part of a literal, not all of it
    "cur.execute(f\"SELECT * FROM t ORDER BY {column}\")",              # a column name
    "cur.execute(query)",                                              # built elsewhere
    "cur.execute(f\"SELECT * FROM t WHERE a = '{a.strip()}'\")",       # a call: re-evaluated differently? unsure
    "cur.execute(f\"SELECT * FROM t WHERE a = '{a!r}'\")",              # a conversion
    "cur.execute(f\"SELECT * FROM t WHERE a = {a}\", extra)",           # already has parameters
    "cur.execute(f\"\"\"SELECT * FROM t WHERE a = '{a}'\"\"\")",        # triple-quoted
    "cur.execute(f\"SELECT * FROM t WHERE a = '{a}' AND b = 'it\\'s'\")",  # escapes
    "cur.execute(\"SELECT * FROM t WHERE a = '%s' AND b LIKE '100%%'\" % a)",  # %% literal
    "cur.execute(f\"SELECT * FROM t WHERE a = '{a}'\"); cur.execute(f\"DELETE FROM t WHERE a = '{a}'\")",
    "cur.execute(f\"SELECT * FROM t WHERE a = '{a}'\"",                 # split over lines
    "cur.execute(\"SELECT * FROM t\")",                                 # nothing interpolated
    "cur.execute(f'SELECT * FROM t WHERE a = \"{a}\"')",                # a double-quoted identifier in SQL
    "",
])
def test_string_built_sql_is_left_alone_when_unsure(line: str) -> None:
    assert sql_parameters(line, "?") is None


def test_no_sql_suggestion_without_a_known_placeholder() -> None:
    line = "cur.execute(f\"SELECT * FROM users WHERE name = '{name}'\")"
    assert sql_parameters(line, None) is None
    assert placeholder_for("import sqlite3\n") == "?"
    assert placeholder_for("from psycopg2 import connect\n") == "%s"
    assert placeholder_for("import sqlite3\nimport psycopg\n") is None  # two styles: which one is this call?
    assert placeholder_for("import sqlalchemy\n") is None


@pytest.mark.parametrize(("line", "expected"), [
    ("data = yaml.load(text)", "data = yaml.safe_load(text)"),
    ("    cfg = yaml.load(f, Loader=yaml.FullLoader)", "    cfg = yaml.safe_load(f)"),
    ("return yaml.load(stream, yaml.Loader)", "return yaml.safe_load(stream)"),
])
def test_yaml_load_becomes_safe_load(line: str, expected: str) -> None:
    assert yaml_safe_load(line) == expected


@pytest.mark.parametrize("line", [
    "data = yaml.load(text, Loader=yaml.SafeLoader)",     # already safe
    "data = yaml.load(text, Loader=MyLoader)",            # a custom loader may build custom objects on purpose
    "a = yaml.load(x); b = yaml.load(y)",
    "data = loader.load(text)",
    "data = yaml.load(*args)",
    "data = yaml.load(",
])
def test_yaml_load_is_left_alone_when_unsure(line: str) -> None:
    assert yaml_safe_load(line) is None


@pytest.mark.parametrize(("line", "expected"), [
    ("    subprocess.run(f\"git log {ref}\", shell=True, check=True)",
     "    subprocess.run([\"git\", \"log\", ref], check=True)"),
    ("out = subprocess.check_output('ls -l /tmp', shell=True)",
     "out = subprocess.check_output([\"ls\", \"-l\", \"/tmp\"])"),
    ("subprocess.call(f\"convert {src} {dst}\", shell=True)", "subprocess.call([\"convert\", src, dst])"),
])
def test_shell_string_becomes_an_argument_list(line: str, expected: str) -> None:
    assert shell_argument_list(line) == expected
    _parses(expected)


@pytest.mark.parametrize("line", [
    "subprocess.run(cmd, shell=True)",                           # a whole command from elsewhere
    "subprocess.run(f\"git log --ref={ref}\", shell=True)",       # a value glued to text
    "subprocess.run(\"ls | wc -l\", shell=True)",                 # a pipe needs the shell
    "subprocess.run(\"echo $HOME\", shell=True)",
    "subprocess.run(\"rm *.tmp\", shell=True)",                   # a glob
    "subprocess.run(\"echo 'a b'\", shell=True)",                 # shell quoting
    "subprocess.run(\"FOO=1 make\", shell=True)",                 # an environment assignment
    "subprocess.run(f\"ls {d}\", shell=flag)",
    "subprocess.run(f\"ls {d}\", shell=True, executable='/bin/zsh')",
    "subprocess.run(f\"ls {d}\", shell=True, **opts)",
    "subprocess.run(f\"ls {d.upper()}\", shell=True)",
    "subprocess.run(f\"ls {a}{b}\", shell=True)",                # two values glued into one word
    "os.system(f\"ls {d}\")",
])
def test_shell_string_is_left_alone_when_unsure(line: str) -> None:
    assert shell_argument_list(line) is None


TEST_FILE = """import pytest


@pytest.mark.skip(reason="flaky")
def test_a():
    pytest.skip("later")
    assert 1


def test_b():
    pytest.skip("later")


@pytest.mark.skipif(sys.platform == "win32", reason="posix")
def test_c():
    pass


@pytest.mark.skip(
    reason="multi-line")
def test_d():
    pass
""".splitlines()


def test_an_added_skip_is_removed_only_where_removing_it_leaves_valid_code() -> None:
    suggestions = {n: remove_added_skip(TEST_FILE, n) for n in range(1, len(TEST_FILE) + 1)}
    assert {n: s for n, s in suggestions.items() if s is not None} == {4: "", 6: ""}
    # line 11 is test_b's only statement: removing it would leave an empty function; 14 is conditional;
    # 19 opens a decorator that goes on over the next line


def test_an_added_only_is_dropped() -> None:
    lines = ["describe('cart', () => {", "  it.only('totals', () => {", "  });", "});"]
    assert remove_added_skip(lines, 2) == "  it('totals', () => {"
    assert remove_added_skip(["it.only('a'); it.only('b')"], 1) is None
    assert remove_added_skip(lines, 9) is None
