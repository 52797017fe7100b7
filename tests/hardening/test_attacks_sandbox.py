"""The sandbox attacks of ``tests/sandbox`` repeated through the full App path: webhook → worker → clone →
court → Docker. The PR's own tests assert that each attack failed, so a contained run is an all-green run;
the worker's secrets are planted in its environment and must not reach the container or any output."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path

import pytest

from tests.app.conftest import SECRET, Harness, verdict_title
from tests.hardening.conftest import Tally
from tests.hardening.repos import publish_repo
from tests.sandbox.attacks import FORK_BOMB_TEST

pytestmark = pytest.mark.hardening("attack")
CANARY = "CANARY-host-env-91c2e7"
ATTACKS = FORK_BOMB_TEST + textwrap.dedent("""
    import os, socket
    import pytest

    @pytest.mark.parametrize("where", [("1.1.1.1", 53), ("172.17.0.1", 6379), ("172.17.0.1", 5432),
                                       ("169.254.169.254", 80)])
    def test_no_network_to_the_internet_the_host_or_metadata(where):
        with pytest.raises(OSError):
            socket.create_connection(where, timeout=2)

    def test_no_dns():
        with pytest.raises(OSError):
            socket.getaddrinfo("api.github.com", 443)

    @pytest.mark.parametrize("path", ["/etc/evil", "/evil", "/sandbox/repo/../../evil"])
    def test_no_write_outside_the_work_dir(path):
        with pytest.raises(OSError):
            with open(path, "w") as handle:
                handle.write("x")

    def test_not_root():
        assert os.getuid() != 0 and os.geteuid() != 0

    def test_no_host_secrets_in_the_environment():
        print(sorted(os.environ.items()))  # printed, so a leak would also show in the output scanned later
        leaked = [k for k in os.environ if k.startswith(("LOGOMESH", "GITHUB", "ANTHROPIC", "DOCKER"))]
        assert leaked == []  # not even a variable of the sandbox's own: nothing tells a test it is being reviewed
""")


async def test_sandbox_attacks_through_the_app_are_contained(harness: Harness, tally: Tally, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    h = harness
    for name in ("fork bomb in the PR's tests", "network to the internet from the PR's tests",
                 "network to the host's Redis/PostgreSQL from the PR's tests", "cloud metadata endpoint",
                 "DNS lookup", "write outside the work dir", "run as root", "read the worker's secrets from env"):
        tally(f"sandbox via the App: {name}")
    monkeypatch.setenv("LOGOMESH_HARDENING_CANARY", CANARY)
    monkeypatch.setenv("GITHUB_TOKEN", CANARY)
    h.settings = h.settings.model_copy(update={"sandbox": "docker"})
    payload = publish_repo(h, tmp_path / "w", "sbx", {"tests/test_attacks.py": ATTACKS})
    assert (await h.post("pull_request", payload)).status_code == 202
    await h.run_worker()
    run = next(r for r in h.github.check_runs.values() if r["repo"] == "octo/sbx")
    assert run["status"] == "completed" and verdict_title(run["output"]["title"]), run["output"]
    with sqlite3.connect(tmp_path / "dbom.db") as db:
        evaluation = db.execute("SELECT evaluation FROM dbom ORDER BY seq DESC LIMIT 1").fetchone()[0]
    data = json.loads(evaluation)
    assert data["measured"]["testing"] is True
    runs = [e["summary"] for e in data["evidence"] if e["kind"] == "tests"]
    # 11 attack tests plus the repository's own test
    assert runs and runs[0].startswith("12 passed, 0 failed, 0 errors"), runs
    outputs = json.dumps(list(h.github.check_runs.values())) + json.dumps(list(h.github.comments.values()))
    for secret in (CANARY, SECRET, *h.github.tokens):
        assert secret not in outputs and secret not in evaluation
