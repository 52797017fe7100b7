"""Resolution before installation: the exact artefacts an environment will hold, each with its sha256.

The setup phase first asks pip what it would install (``pip install --dry-run --ignore-installed --report``, in a
throw-away venv under the setup container's ``/tmp``, which is never committed). pip's installation report
(https://pip.pypa.io/en/stable/reference/installation-report/) lists every distribution of the resolved set with
the URL of its artefact and the artefact's sha256 (from the index's link, or computed by pip from the download).
That set keys the cached environment, and the environment is then installed from it alone:
``pip install --require-hashes --no-deps`` of ``name==version --hash=sha256:…`` lines, so the cached layer holds
exactly the artefacts its key names. A resolution that fails, or lists an artefact without a hash (a direct URL,
a local path), gives no resolved set: the requirements are then installed as before (together, else one by one).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.utils import canonicalize_name

MARK = "LOGOMESH-RESOLVED"
# run by the image's own interpreter with -I -S: condenses pip's report to what the key and the install need
CONDENSE = r"""
import json, sys
report = json.load(open(sys.argv[1], encoding="utf-8"))
found = []
for item in report.get("install", []):
    meta = item.get("metadata") or {}
    info = item.get("download_info") or {}
    archive = info.get("archive_info") or {}
    digest = (archive.get("hashes") or {}).get("sha256")
    if not digest and str(archive.get("hash", "")).startswith("sha256="):
        digest = archive["hash"].split("=", 1)[1]
    found.append([meta.get("name"), meta.get("version"), info.get("url"), digest])
print("LOGOMESH-RESOLVED " + json.dumps(found))
"""


@dataclass(frozen=True, order=True)
class Artefact:
    """One distribution of a resolved set: what pip will download, and the sha256 it must have."""

    name: str
    version: str
    sha256: str
    url: str


def resolve_script(python: str, requirements_file: str, work: str = "/tmp/logomesh-resolve") -> str:  # noqa: S108
    """The shell script printing the resolved set (``LOGOMESH-RESOLVED [[name, version, url, sha256], …]``)."""
    return f"""set -e
{python} -m venv {work}/venv
{work}/venv/bin/python -m pip install --quiet --dry-run --ignore-installed --report {work}/report.json \\
  -r {requirements_file}
{python} -I -S -c {shlex.quote(CONDENSE)} {work}/report.json
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


def built_from_source(artefacts: Sequence[Artefact]) -> tuple[str, ...]:
    """The artefacts that are not wheels (``name==version``): pip runs their build, which is code of theirs."""
    return tuple(f"{a.name}=={a.version}" for a in sorted(artefacts)
                 if not a.url.split("#", 1)[0].split("?", 1)[0].endswith(".whl"))


def locked_requirements(artefacts: Sequence[Artefact]) -> str:
    """The requirements file pip installs from with ``--require-hashes``: one pinned, hashed line each."""
    return "".join(f"{a.name}=={a.version} --hash=sha256:{a.sha256}\n" for a in artefacts)


def locked_install_script(python: str, env_dir: str, locked_file: str) -> str:
    """Make the venv and install exactly the resolved set: pinned, hash-checked, nothing resolved again; when the
    set fails as a whole (an sdist that does not build here), each artefact alone, the failing ones named
    (:func:`sandbox.environment.install_script`)."""
    from sandbox.environment import install_script

    return install_script(python, env_dir, locked_file, options="--require-hashes --no-deps")


def resolved_key(material: Sequence[object], artefacts: Sequence[Artefact]) -> str:
    """What an environment installed from a resolved set is cached under: ``material`` (the image, the
    interpreter, the index, its extra hosts, the repository) and every artefact's name, version and sha256 (the
    URL is left out: the same file from another mirror path is the same environment)."""
    listed = [(a.name, a.version, a.sha256) for a in sorted(artefacts)]
    return hashlib.sha256(repr([list(material), listed]).encode()).hexdigest()
