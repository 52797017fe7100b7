"""Which package manager installs a JavaScript project's packages, and how, in the setup phase: npm from
``package-lock.json`` / ``npm-shrinkwrap.json`` (``npm ci``), pnpm from ``pnpm-lock.yaml`` (``pnpm install
--frozen-lockfile``). Never a script of a package (``--ignore-scripts``), never a registry but the operator's.

pnpm is itself an npm package: the setup container installs the release ``package.json``'s ``packageManager``
names (``pnpm@9.15.0``), else the major line that writes the lock's ``lockfileVersion`` (``9.0`` → pnpm 9, ``6.0`` →
8, ``5.4`` → 7), from the same registry, then installs the project's packages with it, copied (not linked) out of a
store outside the environment. A pnpm workspace, a Yarn lock or an unknown lock version is named as not supported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

NPM_LOCKS = ("npm-shrinkwrap.json", "package-lock.json")  # what `npm ci` installs from, in npm's order
PNPM_LOCK = "pnpm-lock.yaml"
# the pnpm line that writes each lockfileVersion
PNPM_LINES = {"9.0": "9", "6.1": "8", "6.0": "8", "5.4": "7", "5.3": "6"}
PACKAGE_MANAGER = re.compile(r"^(npm|pnpm|yarn|bun)@(\d+(?:\.\d+){0,2}(?:-[\w.]+)?)(?:\+\S+)?$")
# where the setup container installs pnpm (never in the environment); /tmp is mounted noexec there, so pnpm is
# started by node, never as a program of its own
TOOLS = "/tmp/logomesh-pm"  # noqa: S108
QUIET = "--no-audit --no-fund --loglevel=warn"


@dataclass(frozen=True)
class PackageManager:
    name: str  # npm, pnpm
    lock: str  # the lock file it installs from
    version: str | None = None  # the release to install first (pnpm); None: the image's npm

    def script(self) -> str:
        """The shell command that installs the packages in the current folder (``package.json`` and the lock beside
        it)."""
        if self.name == "npm":
            return f"npm ci --ignore-scripts {QUIET}"
        return (f"npm install --global --prefix {TOOLS} --ignore-scripts {QUIET} pnpm@{self.version} && "
                f"node {TOOLS}/lib/node_modules/pnpm/bin/pnpm.cjs install --frozen-lockfile --ignore-scripts "
                "--store-dir /tmp/pnpm-store --package-import-method=copy --config.confirmModulesPurge=false "
                "--reporter=append-only")

    @property
    def command(self) -> str:
        return "npm ci" if self.name == "npm" else f"pnpm {self.version} install"


def pnpm_line(lock_text: str) -> str | None:
    """The pnpm line that writes ``pnpm-lock.yaml``'s ``lockfileVersion`` (None: a version LogoMesh does not know)."""
    found = re.search(r"^lockfileVersion:\s*['\"]?([\d.]+)['\"]?\s*$", lock_text, re.MULTILINE)
    return PNPM_LINES.get(found.group(1)) if found else None


def choose(manifest: Mapping[str, object], paths: list[str],
           read_lock: str | None) -> tuple[PackageManager | None, str]:
    """``(the manager, "")`` for the tree's lock files, or ``(None, why not)``; ``read_lock`` is the text of
    ``pnpm-lock.yaml`` when the tree has one."""
    said = manifest.get("packageManager")
    declared = PACKAGE_MANAGER.match(said.strip()) if isinstance(said, str) else None
    npm = next((name for name in NPM_LOCKS if name in paths), None)
    if npm is not None and (declared is None or declared.group(1) == "npm"):
        return PackageManager("npm", npm), ""
    if PNPM_LOCK in paths and (declared is None or declared.group(1) == "pnpm"):
        if "pnpm-workspace.yaml" in paths:
            return None, "a pnpm workspace (pnpm-workspace.yaml) is not supported yet"
        line = declared.group(2) if declared is not None else pnpm_line(read_lock or "")
        if line is None:
            return None, f"{PNPM_LOCK}'s lockfileVersion is not one LogoMesh knows a pnpm release for"
        return PackageManager("pnpm", PNPM_LOCK, line), ""
    if npm is not None:
        return PackageManager("npm", npm), ""
    other = [name for name in ("yarn.lock", "bun.lockb", "bun.lock") if name in paths]
    if other:
        return None, (f"{', '.join(other)} is not supported yet; LogoMesh installs from package-lock.json (npm ci) "
                      f"or {PNPM_LOCK} (pnpm)")
    return None, "there is no package-lock.json or pnpm-lock.yaml, and LogoMesh installs from a lock file only"
