"""Go's sinks read from its syntax tree (tree-sitter): each rule against a hostile and a friendly twin."""

from __future__ import annotations

import pytest

from checks.languages.go_syntax import available, check_go

pytestmark = pytest.mark.skipif(not available(), reason="the tree-sitter wheels are not installed")


def rules(source: str) -> list[tuple[str, int | None, str]]:
    found = check_go(source)
    assert found is not None
    return [(v.rule, v.line, v.severity) for v in found]


def program(imports: str, body: str) -> str:
    return f"package a\n\nimport (\n{imports}\n)\n\nfunc f(db *sql.DB, x string) {{\n{body}\n}}\n"


@pytest.mark.parametrize(("body", "expected"), [
    ('\texec.Command("sh", "-c", "ls "+x)', [("go-exec-shell", 9, "high")]),
    ('\texec.CommandContext(ctx, "/bin/bash", "-c", x)', [("go-exec-shell", 9, "high")]),
    ('\texec.Command("sh", "-c", "ls -l")', [("go-exec-shell", 9, "medium")]),  # a fixed shell line
    ('\texec.Command("ls", "-l", x)', []),  # no shell: the argument is one argument
])
def test_a_shell_started_through_os_exec(body: str, expected: list[tuple[str, int, str]]) -> None:
    assert rules(program('\t"os/exec"\n\t"database/sql"', body)) == expected


def test_an_aliased_import_is_the_same_package_and_another_package_is_not() -> None:
    aliased = program('\trun "os/exec"\n\t"database/sql"', '\trun.Command("sh", "-c", x)')
    assert rules(aliased) == [("go-exec-shell", 9, "high")]
    other = program('\t"example.com/exec"\n\t"database/sql"', '\texec.Command("sh", "-c", x)')
    assert rules(other) == []


@pytest.mark.parametrize(("body", "expected"), [
    ("\tdb.Query(\"select * from t where a = '\" + x + \"'\")", [("go-sql-string", 9, "high")]),
    ('\tdb.ExecContext(ctx, fmt.Sprintf("delete from t where id = %s", x))', [("go-sql-string", 9, "high")]),
    ('\tdb.Query("select * from t where a = ?", x)', []),  # a query argument
    ('\tdb.Exec("select 1 " + "from t")', []),  # literals joined
    ('\tdb.QueryRow(fmt.Sprintf("select %d", 3))', []),  # Sprintf of literals only
])
def test_sql_built_from_strings(body: str, expected: list[tuple[str, int, str]]) -> None:
    assert rules(program('\t"database/sql"\n\t"fmt"', body)) == expected


def test_text_template_beside_http_and_unsafe() -> None:
    served = program('\t"database/sql"\n\t"net/http"\n\t"text/template"', "\t_ = http.StatusOK")
    assert rules(served) == [("go-text-template-html", 6, "high")]
    offline = program('\t"database/sql"\n\t"text/template"', "\t_ = template.New")  # a code generator: fine
    assert rules(offline) == []
    escaped = program('\t"database/sql"\n\t"net/http"\n\t"html/template"', "\t_ = http.StatusOK")
    assert rules(escaped) == []
    assert rules(program('\t"database/sql"\n\t"unsafe"', "\t_ = unsafe.Sizeof(x)")) == [("go-unsafe", 5, "medium")]
