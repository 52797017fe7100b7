"""JavaScript's and TypeScript's sinks read from their syntax tree (tree-sitter): each rule against a hostile and a
friendly twin."""

from __future__ import annotations

import pytest

from checks.languages.javascript_syntax import available, check_javascript, scopes

pytestmark = pytest.mark.skipif(not available(), reason="the tree-sitter wheels are not installed")


def rules(source: str, path: str = "src/a.js") -> list[tuple[str, int | None, str]]:
    found = check_javascript(source, path)
    assert found is not None
    return [(v.rule, v.line, v.severity) for v in found]


@pytest.mark.parametrize(("source", "expected"), [
    ("const cp = require('child_process');\ncp.exec('ls ' + dir);", [("js-child-process-shell", 2, "high")]),
    ("const { execSync } = require('node:child_process');\nexecSync(`git log ${ref}`);",
     [("js-child-process-shell", 2, "high")]),
    ("import { spawn as run } from 'child_process';\nrun(cmd, { shell: true });",
     [("js-child-process-shell", 2, "high")]),
    ("import * as cp from 'node:child_process';\ncp.exec('git status');", [("js-child-process-shell", 2, "medium")]),
    ("const cp = require('child_process');\ncp.spawn('git', ['log', ref]);", []),  # no shell: one argument each
    ("const cp = require('child_process');\ncp.execFile('git', ['log', ref], { shell: false });", []),
    ("const other = require('./runner');\nother.exec('ls ' + dir);", []),  # not child_process
    ("db.exec('ls ' + dir);", []),
])
def test_a_shell_started_through_child_process(source: str, expected: list[tuple[str, int, str]]) -> None:
    assert rules(source) == expected


@pytest.mark.parametrize(("source", "expected"), [
    ("eval(input);", [("js-eval", 1, "high")]),
    ("const f = new Function('a', body);", [("js-eval", 1, "high")]),
    ("setTimeout('run(' + x + ')', 10);", [("js-eval", 1, "high")]),
    ("const vm = require('vm');\nvm.runInNewContext(code, {});", [("js-vm", 2, "high")]),
    ("import vm from 'node:vm';\nnew vm.Script(source);", [("js-vm", 2, "high")]),
    ("eval('1 + 1');", []),
    ("const f = new Function('a', 'return a + 1');", []),
    ("setTimeout(() => run(x), 10);", []),
    ("const vm = require('vm');\nvm.runInNewContext('1 + 1', {});", []),
    ("obj.eval(input);", []),  # a method named eval is not the global
])
def test_code_built_at_run_time_and_run(source: str, expected: list[tuple[str, int, str]]) -> None:
    assert rules(source) == expected


@pytest.mark.parametrize(("source", "expected"), [
    ("db.query(\"select * from users where name = '\" + name + \"'\");", [("js-sql-string", 1, "high")]),
    ("await pool.execute(`delete from t where id = ${id}`);", [("js-sql-string", 1, "high")]),
    ("db.query('select * from users where name = $1', [name]);", []),
    ("db.query('select * ' + 'from users');", []),  # literals joined
    ("db.query(`select 1`);", []),
])
def test_sql_built_from_strings(source: str, expected: list[tuple[str, int, str]]) -> None:
    assert rules(source) == expected


@pytest.mark.parametrize(("source", "expected"), [
    ("const fs = require('fs');\nconst path = require('path');\n"
     "app.get('/f', (req, res) => res.send(fs.readFileSync(path.join(root, req.params.name))));",
     [("js-path-traversal", 3, "high")]),
    ("import { readFile } from 'node:fs/promises';\nawait readFile(`./files/${req.query.file}`);",
     [("js-path-traversal", 2, "high")]),
    ("const fs = require('fs');\nfs.createReadStream(req.body.path);", [("js-path-traversal", 2, "high")]),
    ("const fs = require('fs');\nconst path = require('path');\nfs.readFileSync(path.join(__dirname, 'a.json'));",
     []),
    ("const fs = require('fs');\nconst path = require('path');\n"
     "fs.readFileSync(path.join(root, safeName(req.params.name)));", []),
])
def test_a_path_from_the_request(source: str, expected: list[tuple[str, int, str]]) -> None:
    # a sanitiser's call between the request and the path is not a path built from the request
    assert rules(source) == expected


def test_unsafe_deserialisation_and_typescript() -> None:
    assert rules("const serialize = require('node-serialize');\nserialize.unserialize(body);") == [
        ("js-unsafe-deserialize", 1, "high")]
    assert rules("const s = require('serialize-javascript');\ns(data);") == []
    typed = ("import { exec } from 'child_process';\nexport function run(cmd: string): void {\n"
             "  exec(cmd as string);\n}\n")
    assert rules(typed, "src/run.ts") == [("js-child-process-shell", 3, "high")]
    tsx = ("import vm from 'vm';\n"
           "export const C = (p: { code: string }) => <div>{vm.runInThisContext(p.code)}</div>;\n")
    assert rules(tsx, "src/c.tsx") == [("js-vm", 2, "high")]


def test_the_scopes_a_change_touches() -> None:
    source = ("/**\n * Sums two numbers.\n */\nfunction add(a, b) {\n  return a + b;\n}\n\n"
              "export const mean = (values) => {\n  return values.length;\n};\n\n"
              "class Tally {\n  push(value) {\n    this.values.push(value);\n  }\n}\n")
    assert scopes(source) == (("add", 4, 6, "Sums two numbers."), ("mean", 8, 10, None), ("Tally", 12, 16, None),
                              ("Tally.push", 13, 15, None))
    typed = "export function first<T>(items: T[]): T {\n  return items[0];\n}\n"
    assert scopes(typed, "src/first.ts") == (("first", 1, 3, None),)
