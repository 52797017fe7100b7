"""Release data (sandbox/release_data.py): what a project generates and leaves out of git comes from its own release.

A real JSON simple index (PEP 691, with PEP 700 upload times) on loopback serves real wheels; the ignore rules are
git's own; the sandbox runs are real Docker runs of a project whose tests need its generated data.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import http.server
import json
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.review.gitrepo import GitRepo
from checks.models import TestSpec
from sandbox.docker_sandbox import DockerSandbox, SetupOptions
from sandbox.limits import SandboxLimits
from sandbox.release_data import Fill, ReleaseIndex, fill, newest_wheel, project_name, wanted
from sandbox.trees import GitTree
from tests.gitfixture import RepoBuilder
from tests.images import SANDBOX_IMAGE
from tests.realworld.conftest import FIXTURES, clone_bundles
from tests.sandbox.index import full_wheel, serve_index, vendored_wheel, write_wheel

BEFORE = "2026-06-01T00:00:00+00:00"
LOADER = ('import json, os\n\n'
          'def table():\n'
          '    path = os.path.join(os.path.dirname(__file__), "data", "table.json")\n'
          '    if not os.path.exists(path):\n'
          '        raise RuntimeError("the data files are not available: build them with scripts/make_data.py")\n'
          '    with open(path) as handle:\n'
          '        return json.load(handle)\n')
BASE_FILES = {
    "setup.py": "from setuptools import setup\nsetup(name='tabledata', version='1.0', packages=['tabledata'])\n",
    "tabledata/__init__.py": LOADER,
    "tabledata/data/.gitignore": "*\n!.gitignore\n!LICENSE\n",
    "tabledata/data/LICENSE": "the data's licence\n",
    "scripts/make_data.py": "# writes tabledata/data/table.json from the upstream tables\n",
    "tests/test_table.py": "from tabledata import table\n\ndef test_the_table_knows_x():\n"
                           "    assert table()['x'] == 1\n",
}
RELEASE = {
    "tabledata/__init__.py": LOADER.encode(),
    "tabledata/data/table.json": b'{"x": 1}',
    "tabledata/data/LICENSE": b"the release's licence\n",  # committed at base: the tree's own wins
    "tabledata/data/helper.py": b"raise SystemExit('code from a wheel never lands in a tree')\n",
    "tabledata/notes.txt": b"absent at base and not ignored: never filled\n",
}


@contextlib.contextmanager
def json_index(root: Path, wheels: dict[str, list[tuple[Path, str]]], *, tamper: bool = False,
               upload_times: bool = True) -> Iterator[str]:
    """A PEP 691 index: ``wheels`` (project → (wheel, upload time)); ``tamper`` serves other bytes than hashed."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            parts = self.path.strip("/").split("/")
            if parts[0] == "simple" and len(parts) == 2 and parts[1] in wheels:
                files = [{"filename": wheel.name, "url": f"/files/{wheel.name}",
                          "hashes": {"sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()},
                          **({"upload-time": when} if upload_times else {})} for wheel, when in wheels[parts[1]]]
                self._send(json.dumps({"meta": {"api-version": "1.1"}, "name": parts[1], "files": files}).encode(),
                           "application/vnd.pypi.simple.v1+json")
            elif parts[0] == "files" and (root / parts[-1]).is_file():
                data = (root / parts[-1]).read_bytes()
                self._send(data + (b"\0" if tamper else b""), "application/octet-stream")
            else:
                self.send_error(404)

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


def _release(tmp_path: Path, files: dict[str, bytes] | None = None, version: str = "1.0") -> Path:
    return write_wheel(tmp_path, "tabledata", version, files or RELEASE)


def _trees(tmp_path: Path, head_files: dict[str, str | None]) -> tuple[GitTree, GitTree]:
    repo = RepoBuilder(tmp_path / "repo")
    base = repo.commit("base", BASE_FILES)
    head = repo.commit("change", head_files)
    git_bytes = GitRepo.open(repo.path).git_bytes
    return GitTree(git_bytes, base, "base"), GitTree(git_bytes, head, "head")


def _changed(base: GitTree, head: GitTree) -> dict[str, tuple[str | None, str | None]]:
    ours, theirs = base.entries(), head.entries()
    return {p: (base.read(p), head.read(p)) for p in set(ours) | set(theirs) if ours.get(p) != theirs.get(p)}


def _fill_trees(base: GitTree, head: GitTree, url: str) -> Fill:
    want = wanted(base.read, base.paths())
    assert want is not None
    return fill(want, base.read, base.paths(), BEFORE, ReleaseIndex(url), lambda: _changed(base, head))


def _fill(tmp_path: Path, head_files: dict[str, str | None], **index: Any) -> Fill:
    base, head = _trees(tmp_path, head_files)
    with json_index(tmp_path, {"tabledata": [(_release(tmp_path), "2026-01-02T00:00:00Z")]}, **index) as url:
        return _fill_trees(base, head, url)


# --- what a base asks for ------------------------------------------------------------------------------------------

def test_a_base_that_ignores_data_inside_its_package_asks_its_release_for_it() -> None:
    paths = list(BASE_FILES)
    found = wanted(BASE_FILES.get, paths)
    assert found is not None and found.project == "tabledata" and found.packages == ("tabledata",)
    root_rule = {**BASE_FILES, ".gitignore": "src/tabledata/global.dat\n", "tabledata/data/.gitignore": None}
    moved = {k.replace("tabledata/", "src/tabledata/", 1) if k.startswith("tabledata/") else k: v
             for k, v in root_rule.items() if v is not None}
    assert wanted(moved.get, list(moved)) is not None  # src layout, a root rule naming a file in it


@pytest.mark.parametrize("rules", [
    "*.pyc\n__pycache__/\nbuild/\n",                # build output and caches: nothing to fetch
    "tabledata/_version.py\n",                     # setuptools-scm's file is code, written at install
    "tests/data/generated.json\n",                 # data of the tests, not of the package
])
def test_a_base_that_ignores_no_data_of_its_package_asks_for_nothing(rules: str) -> None:
    files = {**{k: v for k, v in BASE_FILES.items() if not k.endswith(".gitignore")}, ".gitignore": rules}
    assert wanted(files.get, list(files)) is None


def test_a_base_without_a_name_or_without_a_package_asks_for_nothing() -> None:
    nameless = {k: v for k, v in BASE_FILES.items() if k != "setup.py"}
    assert wanted(nameless.get, list(nameless)) is None
    flat = {k: v for k, v in BASE_FILES.items() if k != "tabledata/__init__.py"}
    assert wanted(flat.get, list(flat)) is None


def test_no_base_of_the_real_fixture_projects_asks_for_release_data(tmp_path: Path) -> None:
    """The twenty real merged PRs of tests/realworld/: none of their bases ignores data inside its package, so none
    of their reviews reads an index for it."""
    projects = clone_bundles(FIXTURES, tmp_path)
    prs = json.loads((FIXTURES / "prs.json").read_text(encoding="utf-8"))
    for pr in prs:
        base = GitTree(GitRepo.open(projects / pr["repo"]).git_bytes, pr["base"], "base")
        assert base.paths() and wanted(base.read, base.paths()) is None, pr["id"]


def test_the_project_name_is_read_from_pyproject_setup_cfg_or_a_literal_setup_call() -> None:
    assert project_name({"pyproject.toml": '[project]\nname = "a-b"\n'}.get) == "a-b"
    assert project_name({"setup.cfg": "[metadata]\nname = c\n"}.get) == "c"
    assert project_name({"setup.py": "from setuptools import setup\nNAME = 'd'\nsetup(name=NAME)\n"}.get) == "d"
    assert project_name({"setup.py": "import os\nsetup(name=os.environ['X'])\n"}.get) is None  # never run


def test_the_newest_wheel_uploaded_before_the_base_is_taken_never_a_later_or_yanked_one() -> None:
    def entry(name: str, when: str | None, **more: Any) -> dict[str, Any]:
        return {"filename": name, "url": name, "hashes": {"sha256": "0" * 64},
                **({"upload-time": when} if when else {}), **more}

    files = [entry("p-1.0-py3-none-any.whl", "2025-01-01T00:00:00Z"), entry("p-1.0.tar.gz", "2025-06-01T00:00:00Z"),
             entry("p-1.1-cp311-cp311-manylinux_2_17_x86_64.whl", "2025-03-01T00:00:00Z"),
             entry("p-1.1-py3-none-any.whl", "2025-03-01T00:00:00Z"),
             entry("p-1.2-py3-none-any.whl", "2025-04-01T00:00:00Z", yanked="broken"),
             entry("p-2.0-py3-none-any.whl", "2026-07-01T00:00:00Z")]
    assert newest_wheel(files, BEFORE)[0] == "p-1.1-py3-none-any.whl"
    with pytest.raises(LookupError, match="no wheel uploaded before"):
        newest_wheel(files, "2024-01-01T00:00:00+00:00")
    with pytest.raises(LookupError, match="gives no upload times"):
        newest_wheel([entry("p-1.0-py3-none-any.whl", None)], BEFORE)


# --- what a change gets -------------------------------------------------------------------------------------------

def test_only_ignored_data_absent_at_base_is_filled_never_code_a_committed_file_or_an_unignored_one(
        tmp_path: Path) -> None:
    got = _fill(tmp_path, {"tabledata/__init__.py": LOADER + "\n# reads the table\n"})
    assert got.files == {"tabledata/data/table.json": b'{"x": 1}'}
    assert got.note == ("release data: 1 files the base leaves out of git (tabledata/data) from "
                        "tabledata-1.0-py3-none-any.whl")


def test_a_file_of_the_runs_own_tree_wins_and_a_link_in_the_way_is_not_followed() -> None:
    release = Fill(files={"pkg/data/a.dat": b"release", "pkg/data/b.dat": b"release"})
    assert release.for_tree(["pkg/data/a.dat"]) == {"pkg/data/b.dat": b"release"}
    assert release.for_tree(["pkg/data"]) == {}  # a file or a symbolic link where the directory would be


def test_a_change_that_edits_the_generator_of_the_data_gets_none_and_says_why(tmp_path: Path) -> None:
    got = _fill(tmp_path, {"scripts/make_data.py": "# writes tabledata/data/table.json, now with y\n"})
    assert got.files == {}
    assert got.note == ("release data of tabledata not used: the change edits scripts/make_data.py, which names "
                        "data, left out of git (the release's copy is not the head's)")


def test_a_wheel_that_does_not_match_the_index_hash_is_refused_and_named(tmp_path: Path) -> None:
    got = _fill(tmp_path, {"tabledata/__init__.py": LOADER + "\n"}, tamper=True)
    assert got.files == {}
    assert got.note == ("release data of tabledata not used: tabledata-1.0-py3-none-any.whl does not match the "
                        "index's sha256")


def test_an_index_without_upload_times_is_named_not_guessed(tmp_path: Path) -> None:
    got = _fill(tmp_path, {"tabledata/__init__.py": LOADER + "\n"}, upload_times=False)
    assert got.files == {} and got.note == "release data of tabledata not used: the index gives no upload times"


def test_a_wheel_entry_that_climbs_out_of_its_package_is_never_filled(tmp_path: Path) -> None:
    hostile = {**RELEASE, "tabledata/../tests/conftest.py.dat": b"x", "tabledata/data/../../../etc/passwd": b"x",
               "tabledata/data/ok.json": b"{}"}
    base, head = _trees(tmp_path, {"tabledata/__init__.py": LOADER + "\n"})
    with json_index(tmp_path, {"tabledata": [(_release(tmp_path, hostile), "2026-01-02T00:00:00Z")]}) as url:
        got = _fill_trees(base, head, url)
    assert set(got.files) == {"tabledata/data/table.json", "tabledata/data/ok.json"}


# --- real runs ------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def build_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The index the environment installs from (the project's build requirements), for the setup containers."""
    root = tmp_path_factory.mktemp("index")
    wheels = {}
    for name in ("setuptools", "wheel"):
        (root / "simple" / name).mkdir(parents=True)
    wheels["setuptools"] = full_wheel(root / "simple" / "setuptools", "setuptools")
    wheels["wheel"] = vendored_wheel(root / "simple" / "wheel", "wheel")  # what setuptools vendors
    with serve_index(root, wheels) as url:
        yield url


def _sandbox(docker_engine: Any, base: GitTree, head: GitTree, build_index: str, url: str) -> DockerSandbox:
    return DockerSandbox(docker_engine, head, SandboxLimits(timeout_seconds=180), SANDBOX_IMAGE, base=base,
                         setup=SetupOptions(release_index_url=url, index_url=build_index, timeout_seconds=300,
                                            scope=f"owner/release-data-{base.sha[:12]}"))


@pytest.mark.docker
async def test_a_projects_tests_run_with_its_release_data_at_base_and_head(tmp_path: Path, docker_engine: Any,
                                                                   build_index: str) -> None:
    base, head = _trees(tmp_path, {"tabledata/__init__.py": LOADER + "\n# tidy\n"})
    stamp = datetime.datetime.fromtimestamp(base.mtime - 3600, datetime.UTC).isoformat()
    with json_index(tmp_path, {"tabledata": [(_release(tmp_path), stamp)]}) as url:
        sandbox = _sandbox(docker_engine, base, head, build_index, url)
        results = [await sandbox.run_tests(TestSpec(tree=tree)) for tree in ("base", "head")]
    for result in results:
        assert result.status == "ran", result.reason
        assert (result.passed, result.failed) == (1, 0), result.output
        assert result.environment is not None
        assert any(s.startswith("release data: 1 files") for s in result.environment.sources)
        assert result.environment.release_data == "tabledata-1.0-py3-none-any.whl"  # what went into this tree


@pytest.mark.docker
async def test_a_change_that_deletes_committed_data_still_fails_its_test(tmp_path: Path, docker_engine: Any,
                                                                   build_index: str) -> None:
    committed = {**BASE_FILES, "tabledata/data/.gitignore": "*.json\n!table.json\n", "tabledata/data/table.json":
                 '{"x": 1}', "tabledata/data/extra.json.in": "x"}
    repo = RepoBuilder(tmp_path / "repo")
    base_sha = repo.commit("base", committed)
    head_sha = repo.commit("drop the table", {"tabledata/data/table.json": None})
    git_bytes = GitRepo.open(repo.path).git_bytes
    base, head = GitTree(git_bytes, base_sha, "base"), GitTree(git_bytes, head_sha, "head")
    stamp = datetime.datetime.fromtimestamp(base.mtime - 3600, datetime.UTC).isoformat()
    with json_index(tmp_path, {"tabledata": [(_release(tmp_path), stamp)]}) as url:
        sandbox = _sandbox(docker_engine, base, head, build_index, url)
        result = await sandbox.run_tests(TestSpec(tree="head"))
    assert result.status == "ran", result.reason
    assert (result.passed, result.failed) == (0, 1)  # the release's table is never put back
    assert result.environment is not None and result.environment.release_data is None
