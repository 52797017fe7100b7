"""Read a change out of a local git repository without touching its working tree.

Everything goes through ``git`` plumbing with an explicit argv (no shell, no checkout): ``rev-parse``,
``merge-base``, ``diff``, ``cat-file``, ``ls-tree``, ``log``. Symlinks are reported as symlinks and never
followed; file contents are read from git's object store, never from the file system.

Exceptions::

    GitError               git refused or failed; ``args`` and ``stderr`` say how
    └── UnknownRef         a ref that does not name a commit; ``ref`` names it
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from checks.config import RepoConfig
from checks.constraints import path_matches
from checks.diff import parse_diff
from checks.linguist import linguist_marks
from checks.models import Case, ChangedFile, Commit, TestSpec

# a changed file this large is still read and analysed; past it, it is named as not analysed
MAX_FILE_BYTES = 16_000_000
MAX_COMMITS = 250
GIT_TIMEOUT = 120
CONFIG_FILE = ".logomesh.yml"

# Neutralise anything in the repository or the user's config that could run code or ask for input.
SAFE_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "LC_ALL": "C",
}
SAFE_GIT_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "diff.external=",
                   "-c", "core.quotePath=false")


def network_git_env(*, token: str | None = None, protocols: Sequence[str] = ("https", "http")) -> dict[str, str]:
    """The one hardened environment for git that talks to a remote (the App's clone, the audit's clone).

    Inherited ``GIT_*`` variables are dropped (they could point git at another directory, config or helper);
    no global, system or credential-helper config is read; hooks, fsmonitor, submodules, LFS filters and every
    transport but ``protocols`` are off; objects are checked. A ``token`` travels as an ``http.extraheader``
    in ``GIT_CONFIG_*`` variables — never in the URL or argv, where ``ps`` and error messages would show it.
    """
    config = {
        "core.hooksPath": "/dev/null",
        "core.fsmonitor": "false",
        "fetch.recurseSubmodules": "false",
        "submodule.recurse": "false",
        "protocol.allow": "never",
        **{f"protocol.{name}.allow": "always" for name in protocols},
        "credential.helper": "",
        "filter.lfs.smudge": "",
        "filter.lfs.process": "",
        "filter.lfs.required": "false",
        "transfer.fsckObjects": "true",
    }
    if token is not None:
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        config["http.extraheader"] = f"Authorization: Basic {basic}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(SAFE_GIT_ENV)
    env.update({"GIT_LFS_SKIP_SMUDGE": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_ASKPASS": "/bin/false",
                "GIT_CONFIG_COUNT": str(len(config))})
    for i, (key, value) in enumerate(config.items()):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


class GitError(RuntimeError):
    def __init__(self, args: Sequence[str], stderr: str, message: str | None = None) -> None:
        self.git_args = list(args)
        self.stderr = stderr.strip()
        super().__init__(message or f"git {' '.join(args[:2])} failed: {self.stderr or 'no detail'}")


class UnknownRef(GitError):
    def __init__(self, ref: str, stderr: str = "") -> None:
        self.ref = ref
        super().__init__(["rev-parse", ref], stderr, f"unknown revision '{ref}': it does not name a commit")


@dataclass(frozen=True)
class GitRepo:
    path: Path

    @classmethod
    def open(cls, path: str | Path) -> GitRepo:
        root = Path(path)
        if not root.exists():
            raise GitError(["rev-parse"], "", f"{root} does not exist")
        repo = cls(root)
        try:
            inside = repo.git("rev-parse", "--is-inside-work-tree", "--is-bare-repository").split()
        except GitError as exc:
            raise GitError(["rev-parse"], exc.stderr, f"{root} is not a git repository") from exc
        if "true" not in inside:
            raise GitError(["rev-parse"], "", f"{root} is not a git repository")
        return repo

    def git_bytes(self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None,
                  away_from_work_tree: str | None = None) -> bytes:
        """Run git on this repository; ``away_from_work_tree`` runs it from that (empty) folder with the git
        directory named, so nothing in a checked-out working tree (``.gitattributes``) is read."""
        # inherited GIT_* variables (GIT_DIR, GIT_CONFIG_PARAMETERS, …) would make git read another repository
        # or configuration than the one named here
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, **SAFE_GIT_ENV, **(env or {})}
        where = ["-C", str(self.path)]
        if away_from_work_tree is not None:
            where = ["--git-dir", self.git_dir, "-C", away_from_work_tree]
        try:
            proc = subprocess.run(
                ["git", *SAFE_GIT_CONFIG, *where, *args],
                input=input,
                capture_output=True,
                env=env,
                timeout=GIT_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise GitError(args, "", f"git {args[0]} timed out after {GIT_TIMEOUT}s") from exc
        if proc.returncode != 0:
            raise GitError(args, proc.stderr.decode("utf-8", "replace"))
        return proc.stdout

    def git(self, *args: str, env: dict[str, str] | None = None, away_from_work_tree: str | None = None) -> str:
        return self.git_bytes(*args, env=env, away_from_work_tree=away_from_work_tree).decode("utf-8", "replace")

    @property
    def git_dir(self) -> str:
        return self.git("rev-parse", "--absolute-git-dir").strip()

    def resolve(self, ref: str) -> str:
        if ref.startswith("-"):
            raise UnknownRef(ref)
        try:
            return self.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
        except GitError as exc:
            raise UnknownRef(ref, exc.stderr) from exc

    def merge_base(self, base: str, head: str) -> str:
        try:
            return self.git("merge-base", base, head).strip()
        except GitError:
            return base  # unrelated histories: diff against the base itself

    def show(self, sha: str, path: str) -> str | None:
        """A file's text at a commit, or None when it is absent, not a regular file, or too big."""
        entry = self.git("ls-tree", "-z", sha, "--", path).rstrip("\0")
        if not entry:
            return None
        mode, kind, _rest = entry.split(" ", 2)
        if kind != "blob" or mode not in ("100644", "100755"):
            return None
        blob = self.blobs([_rest.split("\t", 1)[0]])
        return blob[0]

    def blobs(self, object_ids: Sequence[str]) -> list[str | None]:
        """Texts of many blobs in one ``cat-file --batch`` call; None for binary or oversized ones."""
        if not object_ids:
            return []
        out = self.git_bytes("cat-file", "--batch", input=("\n".join(object_ids) + "\n").encode())
        texts: list[str | None] = []
        pos = 0
        for _ in object_ids:
            header_end = out.index(b"\n", pos)
            header = out[pos:header_end].split()
            if len(header) < 3 or header[1] != b"blob":
                texts.append(None)
                pos = header_end + 1
                continue
            size = int(header[2])
            data = out[header_end + 1 : header_end + 1 + size]
            pos = header_end + 1 + size + 1
            if size > MAX_FILE_BYTES or b"\0" in data[:8000]:
                texts.append(None)
            else:
                texts.append(data.decode("utf-8", "replace"))
        return texts

    def tree(self, sha: str) -> dict[str, tuple[str, str]]:
        """path → (mode, object id) for every entry of the tree at ``sha``."""
        out = self.git_bytes("ls-tree", "-r", "-z", "--full-tree", sha).decode("utf-8", "replace")
        entries: dict[str, tuple[str, str]] = {}
        for record in filter(None, out.split("\0")):
            meta, path = record.split("\t", 1)
            mode, _kind, oid = meta.split(" ")
            entries[path] = (mode, oid)
        return entries

    def commit_count(self, base: str, head: str) -> int:
        """How many commits ``base..head`` holds (merges left out), however many :meth:`commits` reads."""
        return int(self.git("rev-list", "--count", "--no-merges", f"{base}..{head}").strip() or 0)

    def commits(self, base: str, head: str) -> list[Commit]:
        """The newest :data:`MAX_COMMITS` commits of ``base..head`` (merges left out), oldest first."""
        shas = self.git("rev-list", "--reverse", "--no-merges", f"--max-count={MAX_COMMITS}",
                        f"{base}..{head}").split()
        commits: list[Commit] = []
        for sha in shas:
            meta = self.git("show", "-s", "--format=%an%x00%ae%x00%B", sha)
            name, email, message = [*meta.split("\0", 2), "", ""][:3]
            stat = self.git("show", "--numstat", "--format=", "--no-renames", sha)
            files = ins = dels = 0
            for line in stat.splitlines():
                parts = line.split("\t")
                if len(parts) == 3:
                    files += 1
                    ins += int(parts[0]) if parts[0].isdigit() else 0
                    dels += int(parts[1]) if parts[1].isdigit() else 0
            commits.append(Commit(sha=sha, author_name=name, author_email=email, message=message.strip(),
                                  files_changed=files, insertions=ins, deletions=dels))
        return commits

    def diff(self, base: str, head: str) -> str:
        """The diff of two commits, the same whatever is checked out: git reads attributes (``*.py binary``)
        from the working tree and the index, so both are pointed at an empty place for this command."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="logomesh-diff-") as empty:
            return self.git("-c", f"core.attributesFile={os.devnull}", "diff", "--no-color", "--no-ext-diff",
                            "--no-textconv", "--find-renames", "--unified=3", base, head,
                            env={"GIT_INDEX_FILE": os.path.join(empty, "index")}, away_from_work_tree=empty)


def _why_unread(repo: GitRepo, oid: str, binary: bool) -> str:
    size = int(repo.git("cat-file", "-s", oid).strip() or 0)
    if size > MAX_FILE_BYTES:
        return f"larger than {MAX_FILE_BYTES // 1_000_000} MB ({size} bytes)"
    return "binary content (NUL bytes)" if binary or size else "unreadable"


def _attributes_at(repo: GitRepo, commit: str) -> str | None:
    """The ``.gitattributes`` at the root of ``commit`` (the base's: a change cannot mark its own files)."""
    try:
        return repo.show(commit, ".gitattributes")
    except GitError:
        return None


def read_case(
    repo: GitRepo,
    base_ref: str,
    head_ref: str,
    *,
    config: RepoConfig,
    title: str = "",
    body: str = "",
    repo_name: str = "local",
    pr_number: int | None = None,
    linked_issues: Sequence[str] = (),
    timeout_seconds: int = 600,
) -> Case:
    """Build the court's :class:`Case` for ``base_ref...head_ref`` (the PR's three-dot diff)."""
    base_sha = repo.resolve(base_ref)
    head_sha = repo.resolve(head_ref)
    merge_base = repo.merge_base(base_sha, head_sha)
    diff_text = repo.diff(merge_base, head_sha)
    deltas = [d for d in parse_diff(diff_text) if not any(path_matches(d.path, g) for g in config.ignore)]
    head_tree = repo.tree(head_sha)
    wanted = [(d, head_tree.get(d.path)) for d in deltas]
    readable = [(d, entry) for d, entry in wanted
                if entry is not None and entry[0] in ("100644", "100755") and not d.is_binary]
    texts = dict(zip([d.path for d, _ in readable], repo.blobs([e[1] for _, e in readable]), strict=True))
    unread = {d.path: _why_unread(repo, entry[1], d.is_binary) for d, entry in wanted
              if entry is not None and entry[0] in ("100644", "100755") and texts.get(d.path) is None}
    files = tuple(
        ChangedFile(
            path=d.path,
            old_path=d.old_path,
            status=d.status,
            added_lines=d.added_lines,
            removed_count=d.removed_count,
            is_binary=d.is_binary,
            is_symlink=entry is not None and entry[0] == "120000",
            content=texts.get(d.path),
            not_analysed=unread.get(d.path),
        )
        for d, entry in wanted
    )
    test = config.test
    return Case(
        repo=repo_name,
        pr_number=pr_number,
        base_sha=base_sha,
        head_sha=head_sha,
        title=title,
        body=body,
        linked_issues=tuple(linked_issues),
        diff=diff_text,
        files=files,
        commits=tuple(repo.commits(merge_base, head_sha)),
        commits_total=repo.commit_count(merge_base, head_sha),
        head_paths=tuple(sorted(head_tree)),
        base_committed_at=repo.git("show", "-s", "--format=%cI", base_sha).strip() or None,
        linguist=linguist_marks(_attributes_at(repo, merge_base), [f.path for f in files]),
        test_spec=TestSpec(command=test.command, setup_command=test.setup, environment=test.environment,
                           timeout_seconds=test.timeout_seconds or timeout_seconds),
        config_sha256=config.sha256,
    )
