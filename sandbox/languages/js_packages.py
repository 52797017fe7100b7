"""Which package manager installs a JavaScript project's packages, and how, in the setup phase: npm from
``package-lock.json`` / ``npm-shrinkwrap.json`` (``npm ci``), pnpm from ``pnpm-lock.yaml`` (``pnpm install
--frozen-lockfile``), Yarn from ``yarn.lock`` (classic: ``yarn install --frozen-lockfile``; Berry, 2 and later:
``yarn install --immutable`` into a ``node_modules`` folder). Never a script of a package (``--ignore-scripts``,
``enableScripts: false``), never a registry but the operator's, never a package manager the tree carries (a
committed ``.yarn/releases/*.cjs`` or ``.yarnrc.yml`` is not read).

pnpm and Yarn are npm packages themselves: the setup container installs the release ``package.json``'s
``packageManager`` names (``pnpm@9.15.0``, ``yarn@4.5.3``), else the line that writes the lock (pnpm: its
``lockfileVersion``, ``9.0`` → pnpm 9, ``6.0`` → 8, ``5.4`` → 7; Yarn: ``# yarn lockfile v1`` → 1.22, Berry's
``__metadata.version`` → the last release that writes it, 4 → 2.4.3, 6 → 3.8.7, 8 → 4.12.0, 10 → 4.18.1), from
the same registry, then installs the project's packages with it. Yarn classic fetches each package from the URL its
lock records: the public registries' URLs are rewritten to the operator's registry (:func:`lock_for_install`); the
lock's integrity hashes still hold every package. A pnpm or Yarn workspace, a Bun lock or an unknown lock version is
named as not supported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

NPM_LOCKS = ("npm-shrinkwrap.json", "package-lock.json")  # what `npm ci` installs from, in npm's order
PNPM_LOCK = "pnpm-lock.yaml"
YARN_LOCK = "yarn.lock"
# the pnpm line that writes each lockfileVersion
PNPM_LINES = {"9.0": "9", "6.1": "8", "6.0": "8", "5.4": "7", "5.3": "6"}
# the Yarn line that writes each lock: classic's header, Berry's __metadata.version
YARN_CLASSIC = "1.22"
# (Berry refreshes an older lock, which --immutable refuses: the release must write exactly this version; 4.0-4.12
# write 8, 4.14 writes 9, 4.16 and later 10)
YARN_LINES = {"4": "2.4.3", "5": "3.1.1", "6": "3.8.7", "8": "4.12.0", "9": "4.14.1", "10": "4.18.1"}
# the registries a Yarn classic lock names in its `resolved` URLs when it was written against the public one
PUBLIC_REGISTRIES = ("https://registry.yarnpkg.com/", "https://registry.npmjs.org/")
PACKAGE_MANAGER = re.compile(r"^(npm|pnpm|yarn|bun)@(\d+(?:\.\d+){0,2}(?:-[\w.]+)?)(?:\+\S+)?$")
# where the setup container installs pnpm (never in the environment); /tmp is mounted noexec there, so pnpm is
# started by node, never as a program of its own
TOOLS = "/tmp/logomesh-pm"  # noqa: S108
QUIET = "--no-audit --no-fund --loglevel=warn"


@dataclass(frozen=True)
class PackageManager:
    name: str  # npm, pnpm, yarn
    lock: str  # the lock file it installs from
    version: str | None = None  # the release to install first (pnpm, yarn); None: the image's npm

    @property
    def berry(self) -> bool:
        """Yarn 2 or later (``@yarnpkg/cli-dist``), not Yarn classic (the ``yarn`` package)."""
        return self.name == "yarn" and not (self.version or "").startswith("1")

    def script(self) -> str:
        """The shell command that installs the packages in the current folder (``package.json`` and the lock beside
        it)."""
        if self.name == "npm":
            return f"npm ci --ignore-scripts {QUIET}"
        package = "@yarnpkg/cli-dist" if self.berry else self.name
        fetch = f"npm install --global --prefix {TOOLS} --ignore-scripts {QUIET} {package}@{self.version} && "
        tool = f"node {TOOLS}/lib/node_modules/{package}"
        if self.name == "pnpm":
            return (f"{fetch}{tool}/bin/pnpm.cjs install --frozen-lockfile --ignore-scripts "
                    "--store-dir /tmp/pnpm-store --package-import-method=copy --config.confirmModulesPurge=false "
                    "--reporter=append-only")
        if self.berry:
            return f"{fetch}{tool}/bin/yarn.js install --immutable"
        return (f"{fetch}{tool}/bin/yarn.js install --frozen-lockfile --ignore-scripts --non-interactive "
                "--no-progress --cache-folder /tmp/yarn-cache")

    def environment(self, registry: str, proxy: str) -> dict[str, str]:
        """What the install needs in its environment beside npm's own settings: Berry reads only ``YARN_*``
        (and refuses one it does not know, so no other is set)."""
        if not self.berry:
            return {}
        return {"YARN_NPM_REGISTRY_SERVER": registry.rstrip("/"), "YARN_HTTP_PROXY": proxy,
                "YARN_HTTPS_PROXY": proxy, "YARN_NODE_LINKER": "node-modules", "YARN_ENABLE_SCRIPTS": "false",
                "YARN_ENABLE_IMMUTABLE_INSTALLS": "true", "YARN_ENABLE_TELEMETRY": "false",
                "YARN_ENABLE_PROGRESS_BARS": "false", "YARN_CACHE_FOLDER": "/tmp/yarn-cache"}  # noqa: S108

    @property
    def command(self) -> str:
        return "npm ci" if self.name == "npm" else f"{self.name} {self.version} install"


def lock_for_install(manager: PackageManager, lock_text: str, registry: str) -> str:
    """The lock as the setup container installs from it: Yarn classic's ``resolved`` URLs on the public registry
    pointed at the operator's (``registry``); every other lock as it is."""
    if manager.name != "yarn" or manager.berry:
        return lock_text
    base = registry.rstrip("/") + "/"
    for public in PUBLIC_REGISTRIES:
        if public != base:
            lock_text = lock_text.replace(f'resolved "{public}', f'resolved "{base}')
    return lock_text


def pnpm_line(lock_text: str) -> str | None:
    """The pnpm line that writes ``pnpm-lock.yaml``'s ``lockfileVersion`` (None: a version LogoMesh does not know)."""
    found = re.search(r"^lockfileVersion:\s*['\"]?([\d.]+)['\"]?\s*$", lock_text, re.MULTILINE)
    return PNPM_LINES.get(found.group(1)) if found else None


def yarn_line(lock_text: str) -> str | None:
    """The Yarn line that writes ``yarn.lock`` (None: a lock LogoMesh does not know a Yarn release for)."""
    if re.search(r"^# yarn lockfile v1\s*$", lock_text, re.MULTILINE):
        return YARN_CLASSIC
    found = re.search(r"^__metadata:\s*\n(?:[ \t]+.*\n)*?[ \t]+version:\s*['\"]?(\d+)", lock_text, re.MULTILINE)
    return YARN_LINES.get(found.group(1)) if found else None


def choose(manifest: Mapping[str, object], paths: list[str],
           read_lock: Callable[[str], str | None]) -> tuple[PackageManager | None, str]:
    """``(the manager, "")`` for the tree's lock files, or ``(None, why not)``; ``read_lock`` reads a lock file's
    text (pnpm's and Yarn's name the release that wrote them)."""
    said = manifest.get("packageManager")
    declared = PACKAGE_MANAGER.match(said.strip()) if isinstance(said, str) else None
    npm = next((name for name in NPM_LOCKS if name in paths), None)
    if npm is not None and (declared is None or declared.group(1) == "npm"):
        return PackageManager("npm", npm), ""
    for name, lock, line_of, workspace in (("pnpm", PNPM_LOCK, pnpm_line, "pnpm-workspace.yaml"),
                                           ("yarn", YARN_LOCK, yarn_line, None)):
        if lock not in paths or (declared is not None and declared.group(1) != name):
            continue
        if workspace in paths:
            return None, f"a {name} workspace ({workspace}) is not supported yet"
        if name == "yarn" and manifest.get("workspaces"):
            return None, "a Yarn workspace (package.json's `workspaces`) is not supported yet"
        line = declared.group(2) if declared is not None else line_of(read_lock(lock) or "")
        if line is None:
            return None, f"{lock} was written by a {name} release LogoMesh does not know"
        return PackageManager(name, lock, line), ""
    if npm is not None:
        return PackageManager("npm", npm), ""
    other = [name for name in ("bun.lockb", "bun.lock") if name in paths]
    if other:
        return None, (f"{', '.join(other)} is not supported yet; LogoMesh installs from package-lock.json (npm ci), "
                      f"{PNPM_LOCK} (pnpm) or {YARN_LOCK} (Yarn)")
    return None, ("there is no package-lock.json, pnpm-lock.yaml or yarn.lock, and LogoMesh installs from a lock "
                  "file only")
