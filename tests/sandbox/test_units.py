"""Pieces of the sandbox that need no Docker engine: limits, JUnit parsing, packing, redaction."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from checks.config import parse_repo_config
from rubric import RubricError, load_rubric
from sandbox.errors import RepositoryTooLarge
from sandbox.limits import SANDBOX_UID, SandboxCeiling, SandboxLimits
from sandbox.redact import clean_output
from sandbox.tarball import pack_directory, repack_archive


def test_seed_limits_come_from_the_rubric() -> None:
    limits = SandboxLimits.from_rubric(load_rubric(), timeout_seconds=120)
    assert (limits.memory_mb, limits.cpus, limits.pids, limits.timeout_seconds) == (1536, 1.0, 256, 120.0)


def test_repo_config_may_lower_limits() -> None:
    config = parse_repo_config("rubric:\n  sandbox: {memory_mb: 64, pids: 20}\n")
    limits = SandboxLimits.from_rubric(load_rubric(None, config.rubric_overrides()))
    assert (limits.memory_mb, limits.pids, limits.cpus) == (64, 20, 1.0)


def test_repo_config_may_raise_memory_cpu_pids_and_time_up_to_the_operators_ceiling() -> None:
    config = parse_repo_config("rubric:\n  sandbox: {memory_mb: 4096, cpus: 4, pids: 600}\n"
                               "  testing: {timeout_seconds: 3600}\n")
    limits = SandboxLimits.from_rubric(load_rubric(None, config.rubric_overrides()), timeout_seconds=900,
                                       ceiling=SandboxCeiling(memory_mb=2048, cpus=2.0, pids=1024))
    assert (limits.memory_mb, limits.cpus, limits.pids, limits.timeout_seconds) == (2048, 2.0, 600, 900.0)


@pytest.mark.parametrize("override", ["sandbox: {work_mb: 4096}", "sandbox: {tmp_mb: 4096}",
                                      "sandbox: {fsize_mb: 4096}", "sandbox: {output_kb: 100000}"])
def test_repo_config_may_never_raise_size_limits(override: str) -> None:
    config = parse_repo_config(f"rubric:\n  {override}\n")
    with pytest.raises(RubricError, match="never raise"):
        load_rubric(None, config.rubric_overrides())


def test_timeout_only_shrinks() -> None:
    assert SandboxLimits(timeout_seconds=30).with_timeout(600).timeout_seconds == 30
    assert SandboxLimits(timeout_seconds=30).with_timeout(5).timeout_seconds == 5


def test_a_hostile_results_file_is_read_field_by_field() -> None:
    from checks.models import TestSpec
    from sandbox.results import read_results

    loaded = {"runner": "pytest", "record": {
        "tests": [{"id": "t.py::ok", "outcome": "passed"}, {"id": "t.py::bad", "outcome": "failed",
                                                            "message": "x" * 10_000, "location": "t.py:3"},
                  {"id": "t.py::weird", "outcome": "exploded"}, {"outcome": "passed"}, "not a test",
                  {"id": 7, "outcome": "passed"}],
        "errors": [{"id": "t2.py", "message": "E ModuleNotFoundError: No module named 'zzz'"}],
        "hooks": [{"hook": "pytest_runtest_makereport", "path": "conftest.py", "line": "3"}],
        "runtime": [{"event": "os.system", "path": "a.py", "line": 2}, {"event": 1}],
        "collected": ["t.py::ok", "t.py::bad", 5], "deselected": "all"}}
    result = read_results(loaded, TestSpec(), {})
    assert [(t.name, t.outcome) for t in result.tests] == [("t.py::ok", "passed"), ("t.py::bad", "failed")]
    assert len(result.tests[1].message or "") <= 2000 and result.tests[1].location == "t.py:3"
    assert (result.passed, result.failed, result.errored, result.collected) == (1, 1, 1, 2)
    assert result.hooks == () and result.deselected == () and len(result.runtime) == 1
    assert read_results({"runner": "pytest", "record": None}, TestSpec(), {}).status == "error"


def _members(data: bytes) -> dict[str, tarfile.TarInfo]:
    return {m.name: m for m in tarfile.open(fileobj=io.BytesIO(data))}


def test_pack_directory_keeps_symlinks_as_links(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("host")
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "a.py").write_text("x = 1\n")
    (repo / ".git").mkdir()
    (repo / ".git" / "config").write_text("[core]\n")
    os.symlink(tmp_path / "secret", repo / "leak")
    os.symlink(tmp_path, repo / "leakdir")
    buf = io.BytesIO()
    pack_directory(repo, buf, 1024 * 1024)
    members = _members(buf.getvalue())
    assert members["repo/leak"].issym() and members["repo/leak"].linkname == str(tmp_path / "secret")
    assert members["repo/leakdir"].issym()
    assert "repo/leakdir/secret" not in members and "repo/.git/config" not in members
    assert members["repo/pkg/a.py"].uid == SANDBOX_UID


def test_repack_drops_unsafe_entries(tmp_path: Path) -> None:
    src = io.BytesIO()
    with tarfile.open(fileobj=src, mode="w") as tar:
        for name, kind in (("ok.py", tarfile.REGTYPE), ("../escape.py", tarfile.REGTYPE),
                           ("/abs.py", tarfile.REGTYPE), ("dev", tarfile.CHRTYPE), ("hard", tarfile.LNKTYPE)):
            info = tarfile.TarInfo(name)
            info.type = kind
            info.mode = 0o4755
            info.linkname = "ok.py" if kind == tarfile.LNKTYPE else ""
            tar.addfile(info, io.BytesIO(b"") if kind == tarfile.REGTYPE else None)
    src.seek(0)
    out = io.BytesIO()
    repack_archive(src, out, 1024)
    members = _members(out.getvalue())
    assert set(members) == {"repo", "out", "repo/ok.py"}
    assert members["repo/ok.py"].mode == 0o755


def test_repository_size_is_capped(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"0" * 2048)
    with pytest.raises(RepositoryTooLarge):
        pack_directory(tmp_path, io.BytesIO(), 1024)


def test_output_is_redacted_and_trimmed() -> None:
    text = clean_output(b"token ghp_abcdefghijklmnopqrstuvwxyz0123 password=hunter22 " + b"z" * 5000, 1000)
    assert "ghp_" not in text and "hunter22" not in text
    assert len(text) < 1100 and "characters cut" in text


def test_pack_git_tree_reads_objects_not_attributes(tmp_path: Path) -> None:
    import subprocess

    from app.review.gitrepo import GitRepo
    from sandbox.tarball import pack_git_tree

    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@b", "GIT_CONFIG_GLOBAL": os.devnull}
    root = tmp_path / "r"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "sub" / "x.py").write_text("X = '$Format:%H$'\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / ".gitattributes").write_text("pkg/sub/x.py export-ignore export-subst\n")
    os.symlink("/etc/shadow", root / "link")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "c"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env, capture_output=True)
    repo = GitRepo.open(root)
    buf = io.BytesIO()
    pack_git_tree(repo.git_bytes, repo.resolve("HEAD"), buf, 1 << 20)
    members = _members(buf.getvalue())
    assert members["repo/pkg"].isdir() and members["repo/pkg/sub"].uid == SANDBOX_UID
    with tarfile.open(fileobj=io.BytesIO(buf.getvalue())) as tar:
        member = tar.extractfile("repo/pkg/sub/x.py")
        assert member is not None and member.read() == b"X = '$Format:%H$'\n"
    assert members["repo/run.sh"].mode == 0o755
    assert members["repo/link"].issym() and members["repo/link"].linkname == "/etc/shadow"
