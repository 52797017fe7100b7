"""Resolution before installation: the exact artefacts an environment will hold, each with its sha256.

The setup phase first asks pip what it would install (``pip install --dry-run --ignore-installed --report``, in a
throw-away venv under the setup container's ``/tmp``, which is never committed). pip's installation report
(https://pip.pypa.io/en/stable/reference/installation-report/) lists every distribution of the resolved set with
the URL of its artefact and the artefact's sha256 (from the index's link, or computed by pip from the download).
That set keys the cached environment, and the environment is then installed from it alone:
``pip install --require-hashes --no-deps`` of ``name==version --hash=sha256:…`` lines, so the cached layer holds
exactly the artefacts its key names. A resolution that fails, or lists an artefact without a hash (a direct URL,
a local path), gives no resolved set: the requirements are then installed as before (together, else one by one).

Resolving an sdist runs its build backend (pip asks it for the metadata), and building it into a wheel runs its
build with build dependencies fetched without hashes: both happen in a throw-away container
(:mod:`sandbox.setup_phase`). What reaches the cached layer from it is the wheel file alone, hashed by LogoMesh
(:func:`built_wheels`) and installed by that hash: the sdist's lines in the hashed requirements carry the wheel's
sha256 (:func:`locked_requirements`).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

MARK = "LOGOMESH-RESOLVED"
RESOLVE_WORK = "/tmp/logomesh-resolve"  # noqa: S108 - the build container's own tmpfs
RESOLVE_PYTHON = RESOLVE_WORK + "/venv/bin/python"  # the throw-away venv whose pip resolves and builds
UPLOADED_BEFORE = "PIP_UPLOADED_PRIOR_TO"  # pip's --uploaded-prior-to, as the environment sets it
DATED_PIP = "pip>=26"  # the first pip with --uploaded-prior-to
# the first release of each interpreter the sandbox may offer (python.org): pytest's own stack as of some weeks
# after it starts under it, and is no newer than it must be (today's pytest 9 refuses SQLAlchemy 1.4's plugin of 2021)
PYTHON_RELEASED = {"3.9": "2020-10-05", "3.10": "2021-10-04", "3.11": "2022-10-24", "3.12": "2023-10-02",
                   "3.13": "2024-10-07", "3.14": "2025-10-07"}
TOOLING_GRACE_DAYS = 60  # set, not fitted: the stack's first fix releases for a new interpreter come within weeks


def tooling_before(python: str | None, uploaded_before: str) -> str | None:
    """The upload time before which pytest's own stack is taken for an environment of ``uploaded_before``'s day
    that it cannot start in: :data:`TOOLING_GRACE_DAYS` after ``python``'s first release, or the day itself when
    that is later; None (today's releases) for an interpreter not in :data:`PYTHON_RELEASED`."""
    released = PYTHON_RELEASED.get(python or "")
    if released is None:
        return None
    try:
        day = datetime.fromisoformat(uploaded_before)
    except ValueError:
        return None
    when = datetime.fromisoformat(released).replace(tzinfo=UTC) + timedelta(days=TOOLING_GRACE_DAYS)
    if day.tzinfo is None:
        day = day.replace(tzinfo=UTC)
    return max(when, day).isoformat()
# run by the image's own interpreter with -I -S: condenses pip's report to what the key and the install need
# (further reports: the undated resolution of :func:`resolve_script`, whose index URLs and hashes replace the
# local files the dated resolution took them from)
CONDENSE = r"""
import json, sys
def where(item):
    info = item.get("download_info") or {}
    archive = info.get("archive_info") or {}
    digest = (archive.get("hashes") or {}).get("sha256")
    if not digest and str(archive.get("hash", "")).startswith("sha256="):
        digest = archive["hash"].split("=", 1)[1]
    return info.get("url"), digest
def file_name(url):
    return str(url or "").split("#", 1)[0].rsplit("/", 1)[-1]
indexed = {}
for other in sys.argv[2:]:
    try:
        with open(other, encoding="utf-8") as handle:
            items = json.load(handle).get("install", [])
    except (OSError, ValueError):
        continue
    for item in items:
        url, digest = where(item)
        if url and not url.startswith("file:"):
            indexed[file_name(url)] = (url, digest)
report = json.load(open(sys.argv[1], encoding="utf-8"))
found = []
for item in report.get("install", []):
    meta = item.get("metadata") or {}
    url, digest = where(item)
    if str(url).startswith("file:") and file_name(url) in indexed:
        url, digest = indexed[file_name(url)]
    found.append([meta.get("name"), meta.get("version"), url, digest])
print("LOGOMESH-RESOLVED " + json.dumps(found))
"""


@dataclass(frozen=True, order=True)
class Artefact:
    """One distribution of a resolved set: what pip will download, and the sha256 it must have."""

    name: str
    version: str
    sha256: str
    url: str


def resolve_script(python: str, requirements_file: str, work: str = RESOLVE_WORK, dated: bool = False,
                   undated_file: str | None = None, undated_before: str | None = None) -> str:
    """The shell script printing the resolved set (``LOGOMESH-RESOLVED [[name, version, url, sha256], …]``).
    ``dated``: the set is chosen among releases uploaded before ``PIP_UPLOADED_PRIOR_TO`` (set in the container's
    environment), which needs pip 26 in the throw-away venv: that pip itself is fetched without the date.
    ``undated_file`` (with ``dated``): requirements resolved first among the releases uploaded before
    ``undated_before`` (today's when None), with what they need; their files are offered to the dated resolution
    as local files (``--find-links``, which pip's date does not filter), so the set holds those releases of them
    and the day's of the rest, each artefact named by its index URL and hash."""
    pip = f"{work}/venv/bin/python -m pip"
    upgrade = f"env -u {UPLOADED_BEFORE} {pip} install --quiet --upgrade '{DATED_PIP}'\n" if dated else ""
    links = reports = ""
    if dated and undated_file:
        when = f"env {UPLOADED_BEFORE}={shlex.quote(undated_before)}" if undated_before else f"env -u {UPLOADED_BEFORE}"
        upgrade += (f"{when} {pip} install --quiet --dry-run --ignore-installed "
                    f"--report {work}/undated.json -r {undated_file}\n"
                    f"{when} {pip} download --quiet --dest {work}/undated -r {undated_file}\n")
        links, reports = f" --find-links {work}/undated", f" {work}/undated.json"
    return f"""set -e
{python} -m venv {work}/venv
{upgrade}{pip} install --quiet --dry-run --ignore-installed --report {work}/report.json{links} \\
  -r {requirements_file}
{python} -I -S -c {shlex.quote(CONDENSE)} {work}/report.json{reports}
"""


def parse_resolved(output: str) -> tuple[Artefact, ...] | None:
    """The resolved set from the script's output, sorted; None when there is none, or when an artefact has no
    sha256 (then nothing can be installed by hash)."""
    for line in reversed(output.splitlines()):
        if not line.startswith(MARK + " "):
            continue
        try:
            items = json.loads(line[len(MARK) + 1:])
        except ValueError:
            return None
        found: list[Artefact] = []
        for item in items if isinstance(items, list) else []:
            if not (isinstance(item, list) and len(item) == 4 and all(isinstance(v, str) and v for v in item)):
                return None
            name, version, url, digest = item
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest.lower()):
                return None
            found.append(Artefact(name=str(canonicalize_name(name)), version=version, sha256=digest.lower(),
                                  url=url))
        return tuple(sorted(found))
    return None


def is_wheel(artefact: Artefact) -> bool:
    """Whether pip downloads a wheel for it (else an sdist, whose build is code of its own)."""
    return artefact.url.split("#", 1)[0].split("?", 1)[0].endswith(".whl")


@dataclass(frozen=True, order=True)
class BuiltWheel:
    """A wheel built from one sdist of the resolved set in the throw-away container: its file and its sha256 as
    LogoMesh computed it from the bytes it copied out."""

    artefact: Artefact
    filename: str
    sha256: str

    def describe(self) -> str:
        """``name==version: wheel FILE sha256:… (from the sdist sha256:…)``: what the cached layer holds of it."""
        return (f"{self.artefact.name}=={self.artefact.version}: wheel {self.filename} sha256:{self.sha256} "
                f"(from the sdist sha256:{self.artefact.sha256})")


def built_wheels(sdists: Sequence[Artefact], files: dict[str, bytes]) -> dict[Artefact, BuiltWheel]:
    """The wheel of each sdist among ``files`` (file name → bytes, as copied out of the build container): the one
    whose file name gives the sdist's name and version. Other files are ignored, so what else the builds left
    beside their wheels goes nowhere."""
    by_name = {(a.name, _version(a.version)): a for a in sdists}
    found: dict[Artefact, BuiltWheel] = {}
    for filename, data in sorted(files.items()):
        try:
            name, version, _build, _tags = parse_wheel_filename(filename)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        artefact = by_name.get((str(name), version))
        if artefact is not None and artefact not in found:
            found[artefact] = BuiltWheel(artefact, filename, hashlib.sha256(data).hexdigest())
    return found


def _version(text: str) -> Version | str:
    """The version as PEP 440 compares it (``1.0`` is ``1.0.0``); unparsable, the text."""
    try:
        return Version(text)
    except InvalidVersion:
        return text


def wheel_script(python: str, sdists_file: str, wheels_dir: str, hashed: bool = True, links: bool = False) -> str:
    """Build the sdists of a resolved set into ``wheels_dir`` (the throw-away container's): each sdist checked
    against its hash, nothing resolved again; when they fail together, each alone, a failing one printed as
    ``LOGOMESH-NOT-INSTALLED <line>`` with pip's last error line. Never fails as a whole: what did not build is
    named, the rest of the set is installed. Not ``hashed`` (requirement lines that did not resolve): each line
    with its dependencies, downloaded or built, into wheels the same way. ``links``: the wheels already in
    ``wheels_dir`` are candidates too (local files, which pip's upload date does not filter)."""
    from sandbox.environment import each_script

    options = ("--require-hashes --no-deps " if hashed else "") + (f"--find-links {wheels_dir} " if links else "")
    pip = f"{python} -m pip wheel --quiet --use-pep517 {options}--wheel-dir {wheels_dir}"
    venv = python.rsplit("/bin/", 1)[0]
    return (f"set -e\nmkdir -p {wheels_dir}\n[ -x {python} ] || python3 -m venv {venv}\n"
            + each_script(pip, sdists_file, fail_when_none=False))


def wheel_artefacts(files: dict[str, bytes]) -> tuple[Artefact, ...]:
    """The wheels among ``files`` (file name → bytes) as artefacts pinned by the sha256 LogoMesh computes; one
    per name and version, sorted."""
    found: dict[tuple[str, object], Artefact] = {}
    for filename, data in sorted(files.items()):
        try:
            name, version, _build, _tags = parse_wheel_filename(filename)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        found.setdefault((str(name), version), Artefact(name=str(name), version=str(version),
                                                        sha256=hashlib.sha256(data).hexdigest(), url=filename))
    return tuple(sorted(found.values()))


def locked_requirements(artefacts: Sequence[Artefact], built: dict[Artefact, BuiltWheel] | None = None) -> str:
    """The requirements file pip installs from with ``--require-hashes``: one pinned, hashed line each; an sdist
    that was built carries its wheel's hash (the cached layer installs that wheel, never the sdist)."""
    built = built or {}
    return "".join(f"{a.name}=={a.version} --hash=sha256:{built[a].sha256 if a in built else a.sha256}\n"
                   for a in artefacts)


def locked_install_script(python: str, env_dir: str, locked_file: str, wheels_dir: str | None = None,
                          offline: bool = False) -> str:
    """Make the venv and install exactly the resolved set: pinned, hash-checked, nothing resolved again; the
    built wheels found in ``wheels_dir`` (removed afterwards; ``offline``: the only place looked in). When the set
    fails as a whole, each artefact alone, the failing ones named (:func:`sandbox.environment.install_script`)."""
    from sandbox.environment import install_script

    options = ("--require-hashes --no-deps" + (" --no-index" if offline else "")
               + (f" --find-links {wheels_dir}" if wheels_dir else ""))
    script = install_script(python, env_dir, locked_file, options=options)
    return script + (f"rm -rf {wheels_dir}\n" if wheels_dir else "")


def resolved_key(material: Sequence[object], artefacts: Sequence[Artefact]) -> str:
    """What an environment installed from a resolved set is cached under: ``material`` (the image, the
    interpreter, the index, its extra hosts, the repository) and every artefact's name, version and sha256 (the
    URL is left out: the same file from another mirror path is the same environment)."""
    listed = [(a.name, a.version, a.sha256) for a in sorted(artefacts)]
    return hashlib.sha256(repr([list(material), listed]).encode()).hexdigest()
