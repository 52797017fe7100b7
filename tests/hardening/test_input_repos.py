"""Hostile repositories through the full App path: each review ends with a completed check run that either
scores the change or says clearly why it could not, and nothing outside the repository is ever read."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.app.conftest import SECRET, Harness, git, score_cells, verdict_title
from tests.hardening.conftest import Tally
from tests.hardening.repos import DEFAULT_BASE, publish_repo

pytestmark = pytest.mark.hardening("input")
ENV_CANARY = "CANARY-worker-env-7f3a9c"


def _outputs(h: Harness, repo: str) -> str:
    runs = [r for r in h.github.check_runs.values() if r["repo"] == repo]
    comments = [c["body"] for c in h.github.comments.values() if c["repo"] == repo]
    return json.dumps(runs) + "\n".join(comments)


async def test_binary_non_utf8_symlinks_submodules_lfs_and_syntax_errors(harness: Harness, tally: Tally,
                                                                        tmp_path: Path) -> None:
    h = harness
    env_file = tmp_path / "worker.env"
    env_file.write_text(f"LOGOMESH_WEBHOOK_SECRET={ENV_CANARY}\n")
    h.settings = h.settings.model_copy(update={"sandbox": "auto"})  # the real Docker sandbox runs the tests

    def tweak(work: Path) -> None:
        os.symlink("/proc/self/environ", work / "pkg" / "environ_link")
        os.symlink(str(env_file), work / "pkg" / "env_link")
        os.symlink("../../../../../../../etc/shadow", work / "pkg" / "up_link")
        os.symlink("/", work / "rootdir")
        git(work, "add", "-A")
        sub = git(work, "rev-parse", "HEAD")  # a gitlink to some commit: a submodule that must not be fetched
        git(work, "update-index", "--add", "--cacheinfo", f"160000,{sub},vendor/evil")

    leak_test = ("import pathlib\n\n\ndef test_links_are_not_followed():\n"
                 "    for name in ('pkg/env_link', 'pkg/environ_link', 'pkg/up_link'):\n"
                 "        p = pathlib.Path(name)\n"
                 "        try:\n            print(name, p.read_text()[:200])\n"
                 "        except OSError as exc:\n            print(name, 'refused', exc)\n")
    head_files: dict[str, str | bytes] = {
        "pkg/core.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
        "pkg/logo.png": bytes(range(256)) * 64,
        "pkg/latin1.py": "# caf\xe9 cr\xe8me\ndef name():\n    return 'caf\xe9'\n".encode("latin-1"),
        "pkg/broken.py": "def oops(:\n    return [\n",
        "pkg/nul.py": b"x = 1\x00\x00\nprint(x)\n",
        "data/model.bin": ("version https://git-lfs.github.com/spec/v1\n"
                           "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
                           "size 1073741824\n"),
        ".gitattributes": "*.bin filter=lfs diff=lfs merge=lfs -text\n",
        ".gitmodules": '[submodule "vendor/evil"]\n\tpath = vendor/evil\n\turl = file:///etc\n',
        "tests/test_links.py": leak_test,
    }
    for case in ("binary file", "non-UTF-8 source", "syntax error", "NUL bytes in source",
                 "symlink to /proc/self/environ", "symlink to the worker's env file", "symlink escaping with ..",
                 "symlink to /", "submodule (gitlink + file:// URL)", "LFS pointer to a 1 GB object"):
        tally(case)
    payload = publish_repo(h, tmp_path / "w", "weird", head_files, tweak_head=tweak)
    assert (await h.post("pull_request", payload)).status_code == 202
    await h.run_worker()
    runs = [r for r in h.github.check_runs.values() if r["repo"] == "octo/weird"]
    assert len(runs) == 1 and runs[0]["status"] == "completed", runs
    assert verdict_title(runs[0]["output"]["title"]), runs[0]["output"]
    # a symlink escaping the repository once made Docker refuse the whole tree: T must still be measured
    assert score_cells(runs[0]["output"]["summary"])["T tests"] != "not measured"
    assert "Tests not measured" not in runs[0]["output"]["summary"], runs[0]["output"]["summary"]
    everything = _outputs(h, "octo/weird") + json.dumps(await h.dbom.records())
    assert ENV_CANARY not in everything and SECRET not in everything
    assert "root:" not in everything  # /etc/shadow or /etc/passwd content
    assert not any("file:///etc" in r["path"] or "evil" in r["path"] for r in h.github.git_requests)


async def test_a_50000_file_tree_is_refused_with_the_cap_named(harness: Harness, tally: Tally,
                                                               tmp_path: Path) -> None:
    h = harness
    tally("50,001-file tree (cap 50,000)")

    def tweak(work: Path) -> None:
        blob = subprocess.run(["git", "-C", str(work), "hash-object", "-w", "--stdin"], input=b"x = 1\n",
                              capture_output=True, check=True).stdout.decode().strip()
        listing = "".join(f"100644 blob {blob}\tf{i}.py\n" for i in range(50_001))
        tree = subprocess.run(["git", "-C", str(work), "mktree"], input=listing.encode(), capture_output=True,
                              check=True).stdout.decode().strip()
        git(work, "read-tree", "--prefix=big/", tree)

    payload = publish_repo(h, tmp_path / "w", "huge", {"pkg/x.py": "y = 2\n"}, tweak_head=tweak)
    assert (await h.post("pull_request", payload)).status_code == 202
    await h.run_worker()
    run = next(r for r in h.github.check_runs.values() if r["repo"] == "octo/huge")
    assert run["status"] == "completed" and run["conclusion"] == "neutral"
    assert "more than 50000 files" in run["output"]["summary"]


async def test_a_blob_over_the_size_cap_is_refused(harness: Harness, tally: Tally, tmp_path: Path) -> None:
    h = harness
    # scaled down from 1 GB: a 12 MB incompressible blob against a 4 MB cap exercises the same check
    tally("blob over the clone size cap (12 MB vs 4 MB, scaled down from 1 GB)")
    h.settings = h.settings.model_copy(update={"clone_max_bytes": 4 * 1024 * 1024})
    payload = publish_repo(h, tmp_path / "w", "blob", {"assets/big.bin": os.urandom(12 * 1024 * 1024)})
    assert (await h.post("pull_request", payload)).status_code == 202
    await h.run_worker()
    run = next(r for r in h.github.check_runs.values() if r["repo"] == "octo/blob")
    assert run["status"] == "completed" and run["conclusion"] == "neutral"
    assert "larger than 4194304 bytes" in run["output"]["summary"]


@pytest.mark.parametrize(("name", "config", "expected"), [
    ("invalid YAML", "version: 1\nthresholds: {pass: [\n", "not valid YAML at line"),
    ("YAML that is a list", "- a\n- b\n", "must be a mapping"),
    # (memory, CPU, PIDs and time may be raised up to the operator's ceiling; sizes never)
    ("raise the work dir to 4 GB", "version: 1\nrubric:\n  sandbox: {work_mb: 4096}\n", "work_mb"),
    ("raise the output cap", "version: 1\nrubric:\n  sandbox: {output_kb: 100000}\n", "output_kb"),
    ("raise test timeout past the cap", "version: 1\ntest: {timeout_seconds: 99999}\n", "timeout_seconds"),
    ("unknown key smuggling", "version: 1\nnetwork: on\n", "network"),
    ("YAML alias bomb", "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n",
     "invalid field 'a'"),
])
async def test_a_bad_or_greedy_base_config_completes_the_run_with_the_reason(
        harness: Harness, tally: Tally, tmp_path: Path, name: str, config: str, expected: str) -> None:
    h = harness
    tally(f".logomesh.yml: {name}")
    base = {**DEFAULT_BASE, ".logomesh.yml": config}
    slug = "conf-" + uuid.uuid4().hex[:8]  # the git root is shared by the session
    payload = publish_repo(h, tmp_path / "w", slug, {"pkg/core.py": "def add(a, b):\n    return b + a\n"},
                           base_files=base)
    assert (await h.post("pull_request", payload)).status_code == 202
    await h.run_worker()
    run = next(r for r in h.github.check_runs.values() if r["repo"] == f"octo/{slug}")
    assert run["status"] == "completed" and run["conclusion"] == "neutral", run["output"]
    summary = run["output"]["summary"]
    assert "is invalid" in summary and expected in summary, summary
    assert "Fix the configuration on the base branch" in summary
