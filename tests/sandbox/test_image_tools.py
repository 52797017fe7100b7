"""The system tools real suites call are in the sandbox image: tests using them pass inside the real sandbox."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from checks.models import TestSpec
from sandbox.docker_sandbox import DockerSandbox
from sandbox.image import LOCALES, PACKAGES

SUITE = '''
import datetime
import locale
import os
import shutil
import subprocess
import time
import zoneinfo

import pytest


def test_less_pages_output():
    out = subprocess.run(["less", "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("less ")
    # and pages a file as a pager does when not on a terminal
    assert subprocess.run(["less", "-F", __file__], capture_output=True, text=True).stdout.startswith("import datetime")


def test_git_makes_a_repository(tmp_path):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True, env=env)
    (tmp_path / "r" / "f").write_text("x")
    subprocess.run(["git", "-C", str(tmp_path / "r"), "add", "f"], check=True, env=env)
    subprocess.run(["git", "-C", str(tmp_path / "r"), "commit", "-qm", "m"], check=True, env=env)
    log = subprocess.run(["git", "-C", str(tmp_path / "r"), "log", "--format=%s"], capture_output=True,
                         text=True, check=True, env=env).stdout
    assert log.strip() == "m"


@pytest.mark.parametrize("name", ["en_US.UTF-8", "C.UTF-8"])
def test_locale(name):
    try:
        assert locale.setlocale(locale.LC_ALL, name) == name
        assert locale.nl_langinfo(locale.CODESET) == "UTF-8"
        if name.startswith("en_US"):
            assert time.strftime("%B", time.struct_time((2024, 1, 1, 0, 0, 0, 0, 1, 0))) == "January"
            assert locale.format_string("%.1f", 1234.5, grouping=True) == "1,234.5"
    finally:
        locale.setlocale(locale.LC_ALL, "C")


def test_zoneinfo_knows_the_world():
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    summer = datetime.datetime(2024, 7, 1, 12, tzinfo=paris)
    assert summer.utcoffset() == datetime.timedelta(hours=2)
    assert datetime.datetime(2024, 1, 1, tzinfo=zoneinfo.ZoneInfo("America/New_York")).tzname() == "EST"
'''


@pytest.mark.docker
async def test_git_less_locales_and_zoneinfo_in_the_real_sandbox(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    assert {"git", "less", "locales", "tzdata"} <= set(PACKAGES) and "en_US.UTF-8 UTF-8" in LOCALES
    root = make_repo({"tests/test_system.py": SUITE})
    result = await sandboxes(root).run_tests(TestSpec())
    assert (result.status, result.failed) == ("ran", 0), result.output[-3000:]
    assert result.passed == 5


@pytest.mark.docker
async def test_a_tool_the_image_lacks_still_fails_the_test(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    """The hostile twin: the passing tests above are not a sandbox that passes everything."""
    suite = ("import subprocess, zoneinfo, locale, pytest\n\n"
             "def test_absent_tool():\n    subprocess.run(['no-such-tool-xyz', '--version'], check=True)\n\n"
             "def test_absent_zone():\n    zoneinfo.ZoneInfo('Mars/Olympus_Mons')\n\n"
             "def test_absent_locale():\n    locale.setlocale(locale.LC_ALL, 'xx_XX.UTF-8')\n")
    root = make_repo({"tests/test_absent.py": suite})
    result = await sandboxes(root).run_tests(TestSpec())
    assert (result.status, result.passed, result.failed) == ("ran", 0, 3), result.output[-3000:]
