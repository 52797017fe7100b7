"""The Red Agent's Go probes in the real Docker sandbox: a test file of the sink's package, built with the image's Go
toolchain and run there; the shell payload's canary file, the SQL the recording driver was sent, a handler's request
carrying the payload under the names it reads — each against a guarded twin that no payload gets through."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from checks.models import RedAnalysis
from checks.red import MCTSRedTeam
from rubric import load_rubric
from sandbox.docker_sandbox import DockerSandbox
from tests.red.fixtures import make_case

pytestmark = [pytest.mark.docker, pytest.mark.slow]

GO_MOD = "module example.com/shop\n\ngo 1.21\n"

HANDLER = """package shop

import (
\t"net/http"
\t"os/exec"
)

// Files lists the folder the request names.
func Files(w http.ResponseWriter, r *http.Request) {
\tout, _ := exec.Command("sh", "-c", "ls "+r.URL.Query().Get("dir")).Output()
\tw.Write(out)
}
"""

USERS = """package shop

import (
\t"database/sql"
\t"strings"
)

// Find returns the id of the user called name.
func Find(db *sql.DB, name string) (int, error) {
\tvar id int
\terr := db.QueryRow("SELECT id FROM users WHERE name = '" + {value} + "'").Scan(&id)
\treturn id, err
}

var _ = strings.ToUpper
"""


async def attack(sandboxes: Callable[..., DockerSandbox], make_repo: Callable[[dict[str, str]], Path],
                 files: dict[str, str]) -> RedAnalysis:
    repo = make_repo({"go.mod": GO_MOD, **files})
    return await MCTSRedTeam().attack(make_case(files), load_rubric(), sandboxes(repo))


@pytest.mark.parametrize(("name", "files", "expected"), [
    ("handler", {"shop/files.go": HANDLER}, ("command-injection", "critical", True)),
    ("handler-quoted", {"shop/files.go": HANDLER.replace('"ls "+r.URL.Query().Get("dir")',
                                                         '"ls -- \'"+strings.ReplaceAll(r.URL.Query().Get("dir"), '
                                                         '"\'", "")+"\'"').replace('"os/exec"',
                                                                                  '"os/exec"\n\t"strings"')},
     ("command-injection", "high", False)),
    ("sql", {"shop/users.go": USERS.replace("{value}", "name")}, ("sql-injection", "high", True)),
    ("sql-escaped", {"shop/users.go": USERS.replace("{value}", 'strings.ReplaceAll(name, "\'", "\'\'")')},
     ("sql-injection", "medium", False)),
])
async def test_a_go_sink_is_confirmed_only_when_a_payload_gets_through(
        sandboxes: Callable[..., DockerSandbox], make_repo: Callable[[dict[str, str]], Path], name: str,
        files: dict[str, str], expected: tuple[str, str, bool]) -> None:
    analysis = await attack(sandboxes, make_repo, files)
    assert [(f.id.split(":")[0], f.severity, f.confirmed) for f in analysis.findings] == [expected], \
        (analysis.findings, analysis.search)
    effect = analysis.findings[0].effect or ""
    if expected[2]:
        assert "canary" in effect or "SQL" in effect, effect
    else:
        assert "not confirmed by" in effect, effect
