"""An sdist's build never runs where the cached environment is made: it is built into a wheel in a throw-away
container, and the cached layer installs that wheel by the hash LogoMesh computed; one that does not build is
named and the rest of the set installs; identical requirement lines are not resolved again once cached. Against
the real sandbox image and a real package index on loopback."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from checks.models import TestSpec
from sandbox.docker_sandbox import DockerSandbox, SetupOptions
from sandbox.limits import SandboxLimits
from sandbox.resolve import Artefact, built_wheels, locked_requirements, wheel_artefacts, wheel_script
from sandbox.setup_phase import environment_image
from tests.gitfixture import RepoBuilder
from tests.images import SANDBOX_IMAGE
from tests.sandbox.index import build_wheel, full_wheel, serve_index, write_sdist

IMAGE = SANDBOX_IMAGE
SITE = "/opt/logomesh/envs/project/lib/python3.11/site-packages"
# where the build of lm-mark leaves a start-up hook: the cached environment's site-packages (made if missing),
# the site-packages of whatever interpreter runs the build, and the environments' own folder
MARKERS = (f"{SITE}/aaa_lm_mark.pth", "/opt/logomesh/envs/lm-mark-was-here")
MARK_SETUP = """
import os, sys
from setuptools import setup
site = os.path.join(sys.prefix, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
for path in MARKERS + (os.path.join(site, "aaa_lm_mark.pth"),):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write("import os\\n")
    except OSError:
        pass
# what the build itself puts into its wheel: proof that it ran
with open(os.path.join("lm_mark", "built.py"), "w") as handle:
    handle.write("BUILT = True\\n")
setup(packages=["lm_mark"])
"""
BROKEN_SETUP = """
import sys
from setuptools import setup
if "bdist_wheel" in sys.argv:
    sys.exit("lm-broken: this build fails on purpose")
setup(packages=["lm_broken"])
"""


@pytest.fixture(scope="module")
def index_requests() -> list[str]:
    return []


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, docker_engine: docker.DockerClient,
          index_requests: list[str]) -> Iterator[str]:
    root = tmp_path_factory.mktemp("index")
    for name in ("lm-mark", "lm-broken", "lm-plain", "setuptools"):
        (root / "simple" / name).mkdir(parents=True)
    wheels = {
        "lm-mark": write_sdist(root / "simple" / "lm-mark", "lm-mark", "1.0.0", {
            "lm_mark/__init__.py": "VALUE = 1\n", "setup.py": MARK_SETUP.replace("MARKERS", repr(MARKERS))}),
        "lm-broken": write_sdist(root / "simple" / "lm-broken", "lm-broken", "1.0.0", {
            "lm_broken/__init__.py": "VALUE = 1\n", "setup.py": BROKEN_SETUP}),
        "lm-plain": build_wheel(root / "simple" / "lm-plain", "lm-plain", "1.0.0", "def one():\n    return 1\n"),
        "setuptools": full_wheel(root / "simple" / "setuptools", "setuptools"),  # what the sdists build with
    }
    with serve_index(root, wheels, requests=index_requests) as url:
        yield url


def sandbox(root: Path, index: str, engine: docker.DockerClient) -> DockerSandbox:
    return DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=180), IMAGE, client=engine,
                                  setup=SetupOptions(index_url=index, cache_mb=4096, scope=f"owner/{root.name}",
                                                     timeout_seconds=300))


MARKED = {
    "requirements-test.txt": "lm-mark==1.0.0\nlm-plain==1.0.0\n",
    "tests/test_env.py": (
        "import os\n\nimport lm_mark.built\nfrom lm_plain import one\n\n\n"
        f"MARKERS = {MARKERS!r}\n\n\n"
        "def test_the_wheel_built_from_the_sdist_is_installed_and_nothing_its_build_wrote_beside_it():\n"
        "    assert lm_mark.VALUE == one() == 1 and lm_mark.built.BUILT\n"
        "    assert [m for m in MARKERS if os.path.exists(m)] == []\n"),
}


@pytest.mark.docker
async def test_an_sdist_is_built_in_a_throw_away_container_and_the_cache_holds_its_hashed_wheel_alone(
        tmp_path: Path, index: str, index_requests: list[str], docker_engine: docker.DockerClient) -> None:
    root = tmp_path / "marked"
    RepoBuilder(root).commit("Uses lm-mark", MARKED)
    made = sandbox(root, index, docker_engine)
    result = await made.run_tests(TestSpec())
    assert result.setup is not None and result.setup.status == "installed", result.reason
    assert (result.status, result.passed, result.failed) == ("ran", 1, 0), result.output[-3000:]
    assert "lm-mark==1.0.0" in result.setup.resolved and "lm-plain==1.0.0" in result.setup.resolved
    assert result.setup.reason is None, result.setup.reason  # nothing left behind to name: it never got here
    # the wheel the environment holds, with the hash it was installed by, and the sdist it came from
    [built] = result.setup.built
    found = re.fullmatch(r"lm-mark==1\.0\.0: wheel (lm_mark-1\.0\.0-py3-none-any\.whl) sha256:([0-9a-f]{64}) "
                         r"\(from the sdist sha256:([0-9a-f]{64})\)", built)
    assert found is not None, built
    assert result.environment is not None
    tag = environment_image(made, result.environment, TestSpec(), made.head)
    # the cached layer: no marker, no wheel files left, and the wheel pinned by its own hash
    listing = docker_engine.containers.run(tag, ["sh", "-c", "ls -d " + " ".join(MARKERS) + " /opt/logomesh/envs/*"
                                                 "; cat /opt/logomesh/envs/setup/locked.txt"], remove=True,
                                           network_disabled=True).decode()
    assert "lm-mark-was-here" not in listing and "aaa_lm_mark.pth" not in listing, listing
    assert "/opt/logomesh/envs/wheels" not in listing, listing
    assert f"lm-mark==1.0.0 --hash=sha256:{found.group(2)}" in listing, listing
    assert f"--hash=sha256:{found.group(3)}" not in listing, listing  # never the sdist

    # the same requirement lines again, in a fresh sandbox: the cached entry, with no request to the index
    asked, image = len(index_requests), docker_engine.images.get(tag).id
    again = await sandbox(root, index, docker_engine).run_tests(TestSpec())
    assert again.passed == 1 and again.setup == result.setup, (again.setup, result.setup)
    assert index_requests[asked:] == [], index_requests[asked:]
    assert docker_engine.images.get(tag).id == image


@pytest.mark.docker
async def test_one_sdist_that_does_not_build_is_named_and_the_rest_of_the_set_installs(
        tmp_path: Path, index: str, docker_engine: docker.DockerClient) -> None:
    root = tmp_path / "broken"
    RepoBuilder(root).commit("Uses lm-plain, and lm-broken", {
        "requirements-test.txt": "lm-broken==1.0.0\nlm-plain==1.0.0\n",
        "tests/test_one.py": "from lm_plain import one\n\n\ndef test_one():\n    assert one() == 1\n"})
    result = await sandbox(root, index, docker_engine).run_tests(TestSpec())
    assert result.setup is not None and result.setup.status == "installed", result.reason
    assert (result.status, result.passed, result.failed) == ("ran", 1, 0), result.output[-3000:]
    reason = result.setup.reason or ""
    assert "not installed" in reason and "lm-broken==1.0.0 (did not build" in reason, reason
    assert "lm-plain" not in reason and "lm-plain==1.0.0" in result.setup.resolved, result.setup
    assert "lm-broken==1.0.0" not in result.setup.resolved and result.setup.built == ()
    # the reason is T's evidence too (the facts the review records)
    from checks.detectives.test_runner import evidence_for

    shown = [e for e in evidence_for(result) if e.kind == "test-environment"]
    assert shown and "lm-broken==1.0.0 (did not build" in str(shown[0].facts["setup"]), shown


@pytest.mark.docker
async def test_lines_that_do_not_resolve_are_built_in_the_throw_away_container_too(
        tmp_path: Path, index: str, docker_engine: docker.DockerClient) -> None:
    # a line the index lacks: no resolved set, so each line is made into wheels on its own, still away from the
    # layer that is cached, which installs those wheels by their hashes with no index at all
    root = tmp_path / "unresolved"
    RepoBuilder(root).commit("Uses lm-mark, and a package nowhere", {
        **MARKED, "requirements-test.txt": "lm-mark==1.0.0\nlm-plain==1.0.0\nlm-nowhere-to-be-found==9.9\n"})
    result = await sandbox(root, index, docker_engine).run_tests(TestSpec())
    assert result.setup is not None and result.setup.status == "installed", result.reason
    assert (result.status, result.passed, result.failed) == ("ran", 1, 0), result.output[-3000:]
    reason = result.setup.reason or ""
    assert "lm-nowhere-to-be-found==9.9" in reason and "lm-mark" not in reason, reason
    assert {"lm-mark==1.0.0", "lm-plain==1.0.0"} <= set(result.setup.resolved), result.setup


def test_the_sdists_build_script_never_fails_as_a_whole_and_checks_each_sdists_hash() -> None:
    script = wheel_script("/tmp/venv/bin/python", "/setup/sdists.txt", "/wheels")
    assert "pip wheel --quiet --use-pep517 --require-hashes --no-deps --wheel-dir /wheels" in script
    assert "exit 1" not in script and "LOGOMESH-NOT-INSTALLED" in script
    by_line = wheel_script("/tmp/venv/bin/python", "/setup/requirements.txt", "/wheels", hashed=False)
    assert "pip wheel --quiet --use-pep517 --wheel-dir /wheels -r /setup/requirements.txt" in by_line
    wheels = wheel_artefacts({"lm_plain-1.0.0-py3-none-any.whl": b"a", "notes.txt": b"b"})
    assert wheels == (Artefact(name="lm-plain", version="1.0.0", sha256=hashlib.sha256(b"a").hexdigest(),
                               url="lm_plain-1.0.0-py3-none-any.whl"),)


def test_a_built_wheel_is_matched_to_its_sdist_by_name_and_version_and_pinned_by_its_own_hash() -> None:
    sdist = Artefact(name="lm-mark", version="1.0", sha256="a" * 64, url="http://i/lm_mark-1.0.tar.gz")
    wheel = Artefact(name="lm-plain", version="1.0.0", sha256="b" * 64, url="http://i/lm_plain-1.0.0-py3-none-any.whl")
    files = {"lm_mark-1.0.0-py3-none-any.whl": b"wheel bytes", "lm_other-1.0-py3-none-any.whl": b"x",
             "not-a-wheel.txt": b"y"}
    built = built_wheels([sdist], files)
    assert list(built) == [sdist] and built[sdist].filename == "lm_mark-1.0.0-py3-none-any.whl"
    digest = hashlib.sha256(b"wheel bytes").hexdigest()
    assert built[sdist].sha256 == digest
    assert locked_requirements([sdist, wheel], built) == (f"lm-mark==1.0 --hash=sha256:{digest}\n"
                                                          f"lm-plain==1.0.0 --hash=sha256:{'b' * 64}\n")
    assert built_wheels([sdist], {"lm_mark-2.0-py3-none-any.whl": b""}) == {}  # another version: not its wheel
    assert locked_requirements([sdist]) == f"lm-mark==1.0 --hash=sha256:{'a' * 64}\n"  # not built yet: the sdist
