"""The setup phase: build a project's environment where the only network is the package index, and cache it.

For an :class:`~checks.models.EnvironmentPlan` with requirements (or a repository's own ``test.setup`` command):

1. a Docker network (:mod:`sandbox.setup_network`) whose only reachable address is the egress proxy
   (:mod:`sandbox.egress`, a container of its own) that lets through only the index's hosts;
2. a throw-away setup container on that network (writable root, its own limits and timeout) that resolves the
   requirements to hash-pinned artefacts (:mod:`sandbox.resolve`) and builds the set's sdists into wheels (or,
   for lines that do not resolve, makes each line's wheels); LogoMesh copies the wheel files out, hashes them, and
   removes the container: no build runs where the environment is committed;
3. a second setup container that makes a venv of the chosen interpreter at ``/opt/logomesh/envs/project``,
   installs exactly that set with ``--require-hashes`` through the proxy with the operator's CA bundle (built
   wheels by their own hash), and appends LogoMesh's tools (pytest, coverage) to its path *after* the project's
   pins;
4. that container committed as ``logomesh-env:<key>`` — the key hashes the image, the interpreter, the resolved
   artefacts, the index and its extra hosts, and the repository; the requirement lines' own key is tagged on it
   too, so the same lines are not resolved again while it lives — and base and head runs, and later reviews,
   reuse it. The cache is bounded in MB; the
   least recently used environments are removed first (a hit re-tags the image, which dates it). A hit reports
   what the build reported (``installed``, the refused destinations kept in a label): whether this review built
   the environment is logged, never part of the result, so two identical reviews give the same bytes.

A repository's own ``test.setup`` command runs after the install in a copy of its tree; that image is not cached
(it depends on the tree) and what the command wrote into the tree is carried into the test run.

Called in a worker thread (it blocks); errors are :class:`~sandbox.errors.SandboxError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import io
import json
import logging
import tarfile
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from docker.errors import DockerException, ImageNotFound
from packaging.utils import canonicalize_name as canonical_name

from checks.models import EnvironmentPlan, SetupReport, TestSpec
from sandbox.egress import allowed_for
from sandbox.env_registry import pull, push
from sandbox.environment import install_script, not_installed, undated_lines
from sandbox.errors import SandboxError
from sandbox.limits import SANDBOX_UID, SandboxLimits
from sandbox.redact import clean_test_output
from sandbox.resolve import (
    RESOLVE_PYTHON,
    UPLOADED_BEFORE,
    Artefact,
    BuiltWheel,
    built_wheels,
    is_wheel,
    locked_install_script,
    locked_requirements,
    parse_resolved,
    resolve_script,
    resolved_key,
    wheel_artefacts,
    wheel_script,
)
from sandbox.setup_network import SetupNetwork, plain_http_index, setup_network
from sandbox.tarball import owned_files_tar
from sandbox.verify_env import verify_image

if TYPE_CHECKING:
    from sandbox.docker_sandbox import DockerSandbox, _Run
    from sandbox.trees import Tree

TOOLS_PYTHON = "/opt/logomesh/tools/bin/python"
ENV_DIR = "/opt/logomesh/envs/project"
ENV_PYTHON = ENV_DIR + "/bin/python"
PREPARED_TREE = "/opt/logomesh/envs/repo"
SETUP_DIR = "/opt/logomesh/envs/setup"
ENV_REPOSITORY = "logomesh-env"
ENV_LABEL = "org.logomesh.env"
REFUSED_LABEL = "org.logomesh.env.refused"  # what the build was refused, reported again on every cache hit
NOT_INSTALLED_LABEL = "org.logomesh.env.not-installed"  # requirements pip failed on, reported again on a hit
STARTUP_LABEL = "org.logomesh.env.startup"  # start-up code and auto-loaded plugins found, reported on a hit
RESOLVED_LABEL = "org.logomesh.env.resolved"  # the distributions installed (name==version), reported on a hit
BUILT_LABEL = "org.logomesh.env.built"  # the wheels built from the set's sdists, with their hashes
TAG_LABEL = "org.logomesh.env.tag"  # the entry's own tag (its resolved set's): where its requirement lines lead
WHEELS_DIR = "/opt/logomesh/envs/wheels"  # built wheels: written by the build container, removed after install
MAX_WHEELS_MB = 512  # what the build container may hand over in wheels
OUTPUT_TAIL = 4000
ENV_LAYOUT = 4  # what a cached environment holds (4: wheels built from sdists in a throw-away container, the
# requirement lines' tag leading to the resolved set's); older entries are not used
MAX_AGE_SECONDS = 7 * 24 * 3600  # a cached environment is rebuilt after this, however often it is hit
# Run in the built environment (its interpreter, -I -S: nothing of the environment runs): every executable line
# of a .pth file, every sitecustomize/usercustomize and every auto-loaded pytest plugin (entry point pytest11),
# each with the distribution whose RECORD lists it. LogoMesh's own tools are not the environment's.
SCAN = r"""
import configparser, csv, json, os, sys
site = sys.argv[1]
owners = {}
for entry in sorted(os.listdir(site)):
    if entry.endswith(".dist-info"):
        name = entry[:-len(".dist-info")]
        print("dist", json.dumps(name.split("-", 1) + [""] * (1 - name.count("-"))))
        try:
            with open(os.path.join(site, entry, "RECORD"), encoding="utf-8") as handle:
                for row in csv.reader(handle):
                    if row:
                        owners[os.path.normpath(os.path.join(site, row[0]))] = name
        except (OSError, ValueError):
            pass
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(os.path.join(site, entry, "entry_points.txt"), encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        if parser.has_section("pytest11"):
            for key, value in parser.items("pytest11"):
                print("plugin", json.dumps([key + " = " + value, name]))
dirs = [site]
for name in sorted(os.listdir(site)):
    if not name.endswith(".pth"):
        continue
    path = os.path.join(site, name)
    try:
        lines = open(path, "rb").read().decode("utf-8-sig", "replace").splitlines()
    except OSError:
        continue
    for number, line in enumerate(lines, 1):
        if line.startswith(("import ", "import\t")):
            if name == "distutils-precedence.pth" and (owners.get(path) or "").startswith("setuptools-"):
                continue  # every venv's own setuptools shim: no news
            print("pth", json.dumps([name + ":" + str(number), owners.get(path), line.strip()[:200]]))
        elif line.strip() and not line.startswith("#"):
            target = os.path.normpath(os.path.join(site, line.strip()))
            if not target.startswith("/opt/logomesh/tools/") and os.path.isdir(target):
                dirs.append(target)
for folder in dirs:
    for module in ("sitecustomize", "usercustomize"):
        for candidate in (module + ".py", module):
            path = os.path.join(folder, candidate)
            if os.path.exists(path):
                print("custom", json.dumps([path, owners.get(os.path.normpath(path))]))
"""
_BUILD_LOCKS: dict[str, threading.Lock] = {}
# (sandbox, plan tag) -> the tag of its resolved set: one resolution per plan and review
_RESOLVED: OrderedDict[tuple[str, str], str] = OrderedDict()
RESOLVED_SIZE = 256
_LOCKS_GUARD = threading.Lock()
log = logging.getLogger(__name__)


@dataclass
class Prepared:
    image: str
    python: str = TOOLS_PYTHON
    has_env: bool = False
    env: dict[str, str] = field(default_factory=dict)
    report: SetupReport = field(default_factory=lambda: SetupReport(status="none"))
    failure: str | None = None
    output: str = ""
    copy_from: str | None = None


def _env_vars(has_env: bool) -> dict[str, str]:
    path = (ENV_DIR + "/bin:" if has_env else "") + "/opt/logomesh/tools/bin:/usr/local/bin:/usr/bin:/bin"
    return {"PATH": path, "VIRTUAL_ENV": ENV_DIR} if has_env else {"PATH": path}


def env_tag(sandbox: DockerSandbox, plan: EnvironmentPlan, spec: TestSpec, tree: Tree) -> str:
    try:
        image_id = sandbox.client.images.get(sandbox.image_for(plan.python)).id
    except DockerException:
        image_id = sandbox.image_for(plan.python)
    options = sandbox.setup
    # the repository (an environment built for one is never handed to another: what a build ran stays in its
    # scope), the interpreter and requirement lines (plan.key), the index and every extra host it may reach
    material = [ENV_LAYOUT, image_id, plan.key, options.index_url, sorted(options.extra_hosts), options.scope,
                list(spec.setup_command or ())]
    if spec.setup_command:
        material.append(hashlib.sha256(sandbox._tar(tree)).hexdigest())
    return f"{ENV_REPOSITORY}:{hashlib.sha256(repr(material).encode()).hexdigest()[:32]}"


def environment_image(sandbox: DockerSandbox, plan: EnvironmentPlan, spec: TestSpec, tree: Tree) -> str:
    """The cached environment's tag this sandbox uses for ``plan``: its resolved set's once resolved (by this
    sandbox, or named by the entry the requirement lines' tag leads to), else the requirement lines' one."""
    tag = env_tag(sandbox, plan, spec, tree)
    with _LOCKS_GUARD:
        known = _RESOLVED.get((sandbox.owner, tag))
    return known or _resolution_of(sandbox, tag) or tag


def prepare_environment(sandbox: DockerSandbox, run: _Run, plan: EnvironmentPlan, tree: Tree,
                        spec: TestSpec) -> Prepared:
    custom = spec.setup_command
    if not plan.requirements and not custom:
        return Prepared(image=sandbox.image_for(plan.python))
    if not sandbox.setup.allow:
        return Prepared(image=sandbox.image_for(plan.python), report=SetupReport(
            status="forbidden", reason="this server runs no setup phase (LOGOMESH_SANDBOX_ALLOW_SETUP=false); the "
            "tests ran with LogoMesh's tools only"))
    tag = env_tag(sandbox, plan, spec, tree)
    with _lock_for(tag):  # head, base and guard runs start together: one builds, the others find it cached
        return _cached_or_built(sandbox, run, plan, tree, spec, tag)


def _lock_for(tag: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _BUILD_LOCKS.setdefault(tag, threading.Lock())


def _cached_or_built(sandbox: DockerSandbox, run: _Run, plan: EnvironmentPlan, tree: Tree, spec: TestSpec,
                     tag: str) -> Prepared:
    if not spec.setup_command:
        # these requirement lines were resolved before (head, base and guard often share them; a cached entry
        # names the set they resolved to): no second resolution, no request to the index
        with _LOCKS_GUARD:
            known = _RESOLVED.get((sandbox.owner, tag))
        known = known or _resolution_of(sandbox, tag)
        hit = cached(sandbox, run, known) if known else None
        if hit is not None:
            return hit
    return _build(sandbox, run, plan, tree, spec, tag)


def _resolution_of(sandbox: DockerSandbox, tag: str) -> str | None:
    """The cached entry the requirement lines' tag leads to (its label names the entry's own tag), if any."""
    try:
        labels = sandbox.client.images.get(tag).labels or {}
    except DockerException:
        return None
    found = labels.get(TAG_LABEL) or ""
    return found if found.startswith(ENV_REPOSITORY + ":") else None


def cached(sandbox: DockerSandbox, run: _Run, tag: str) -> Prepared | None:
    """The cached environment ``tag``, verified against its RECORD hashes; None when there is none, it is too
    old, or a file in it changed after pip installed it (then it is discarded, and the caller builds it again)."""
    try:
        image = sandbox.client.images.get(tag)
    except ImageNotFound:
        image = None
    pulled = image is None and _pulled(sandbox, tag)
    if pulled:
        with contextlib.suppress(ImageNotFound):
            image = sandbox.client.images.get(tag)
    if image is None:
        return None
    if _age_seconds(image.attrs.get("Created")) > MAX_AGE_SECONDS:
        # a hit dates the tag, never the build: an entry is rebuilt from the index once it is this old
        log.info("sandbox environment %s: older than %d s, rebuilt", tag, MAX_AGE_SECONDS)
        with contextlib.suppress(DockerException):
            sandbox.client.api.remove_image(image.id, force=True)  # every tag leading to it goes too
        return None
    python = (image.labels or {}).get("org.logomesh.env.python") or "3"
    try:
        changed = verify_image(sandbox, run, tag, ENV_DIR, TOOLS_PYTHON, _tools_site(python))
    except SandboxError as exc:
        if not pulled:
            raise
        changed = (str(exc),)  # a pulled image that cannot even be verified is not used either
    if changed:
        log.warning("sandbox environment %s: changed since it was built, discarded and rebuilt", tag)
        with contextlib.suppress(DockerException):
            sandbox.client.api.remove_image(image.id, force=True)
        return None
    repository, _, version = tag.partition(":")
    with contextlib.suppress(DockerException):
        sandbox.client.api.tag(tag, repository, version)  # dates the entry for LRU eviction
    log.info("sandbox environment %s: cached", tag)
    # the same report as the build gave: whether this review built it is the cache's state, not a fact
    # about the change, and would make two identical reviews differ
    return Prepared(image=tag, python=ENV_PYTHON, has_env=True, env=_env_vars(True),
                    report=SetupReport(status="installed", refused=_refused_label(image.labels),
                                       reason=_reason(_missing_label(image.labels),
                                                      _list_label(image.labels, STARTUP_LABEL)),
                                       startup=_list_label(image.labels, STARTUP_LABEL),
                                       resolved=_list_label(image.labels, RESOLVED_LABEL),
                                       built=_list_label(image.labels, BUILT_LABEL)))


def _pulled(sandbox: DockerSandbox, tag: str) -> bool:
    """A local miss: the environment pulled by the digest the workers recorded for its key, when a registry is
    set (verified by the caller as any local hit). Any failure is logged and the caller builds it."""
    registry = sandbox.setup.registry
    if registry is None:
        return False
    version = tag.partition(":")[2]
    try:
        digest = pull(sandbox.client.api, registry, version, tag)
    except Exception as exc:  # Redis, the registry or the engine: the shared cache never fails a review
        log.warning("sandbox environment %s: not taken from %s (%s); built here", tag, registry.repository, exc)
        return False
    if digest is None:
        return False
    log.info("sandbox environment %s: pulled from %s@%s", tag, registry.repository, digest)
    return True


def _publish(sandbox: DockerSandbox, tag: str) -> None:
    """A verified build shared: pushed to the registry and its digest recorded for the other workers."""
    registry = sandbox.setup.registry
    if registry is None:
        return
    try:
        digest = push(sandbox.client.api, registry, tag, tag.partition(":")[2])
    except Exception as exc:  # Redis, the registry or the engine: the shared cache never fails a review
        log.warning("sandbox environment %s: not shared through %s (%s)", tag, registry.repository, exc)
        return
    log.info("sandbox environment %s: pushed to %s@%s", tag, registry.repository, digest)


def _tools_site(python: str) -> str:
    """The site-packages of LogoMesh's tools for an interpreter version: the one line of zz-logomesh-tools.pth."""
    return f"/opt/logomesh/tools/lib/python{python}/site-packages"


def resolved_tag(sandbox: DockerSandbox, plan: EnvironmentPlan, artefacts: tuple[Artefact, ...]) -> str:
    """The cached environment of a resolved set: the image, the interpreter, the artefacts' hashes, the index,
    its extra hosts and the repository (an environment is never handed to another repository)."""
    try:
        image_id = sandbox.client.images.get(sandbox.image_for(plan.python)).id
    except DockerException:
        image_id = sandbox.image_for(plan.python)
    options = sandbox.setup
    material = [ENV_LAYOUT, image_id, plan.python, options.index_url, sorted(options.extra_hosts), options.scope]
    return f"{ENV_REPOSITORY}:{resolved_key(material, artefacts)[:32]}"


def _age_seconds(created: object) -> float:
    """Seconds since Docker's ``Created`` timestamp (RFC 3339, nanoseconds); unreadable: infinitely old."""
    if not isinstance(created, str):
        return float("inf")
    text = created.rstrip("Z").split(".")[0]
    try:
        then = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.UTC)
    except ValueError:
        return float("inf")
    return (datetime.datetime.now(datetime.UTC) - then).total_seconds()


def _refused_label(labels: dict[str, str] | None) -> tuple[str, ...]:
    try:
        refused = json.loads((labels or {}).get(REFUSED_LABEL) or "[]")
    except ValueError:
        return ()
    return tuple(sorted(str(r) for r in refused)) if isinstance(refused, list) else ()


def _missing_label(labels: dict[str, str] | None) -> tuple[str, ...]:
    return _list_label(labels, NOT_INSTALLED_LABEL)


def _list_label(labels: dict[str, str] | None, name: str) -> tuple[str, ...]:
    try:
        listed = json.loads((labels or {}).get(name) or "[]")
    except ValueError:
        return ()
    return tuple(str(m) for m in listed) if isinstance(listed, list) else ()


def _startup_found(text: str) -> tuple[str, ...]:
    """The scan's findings, one sentence each: what the environment would run at start-up, and whose it is. A file
    no distribution's RECORD lists was left by something that ran during the install."""
    found: list[str] = []
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        try:
            fields = json.loads(rest)
        except ValueError:
            continue
        if not isinstance(fields, list) or len(fields) < 2:
            continue
        owner = f"from {fields[1]}" if fields[1] else "listed by no distribution"
        if kind == "pth" and len(fields) == 3:
            found.append(f"executable .pth line {fields[0]} ({owner}): {fields[2]}")
        elif kind == "custom":
            found.append(f"{fields[0].rsplit('/', 1)[-1]} ({owner})")
        elif kind == "plugin":
            found.append(f"pytest plugin loaded automatically: {fields[0]} ({owner})")
    return tuple(sorted(found)[:50])


def installed_found(text: str) -> tuple[str, ...]:
    """The scan's distributions as ``name==version`` (names normalised as PEP 503 does), sorted."""
    found: set[str] = set()
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind != "dist":
            continue
        try:
            fields = json.loads(rest)
        except ValueError:
            continue
        if isinstance(fields, list) and len(fields) == 2 and all(isinstance(f, str) for f in fields):
            found.add(f"{canonical_name(fields[0])}=={fields[1]}")
    return tuple(sorted(found))


def _reason(missing: tuple[str, ...], startup: tuple[str, ...]) -> str | None:
    parts = [r for r in (_missing_reason(missing), _startup_reason(startup)) if r]
    return "; ".join(parts) or None


def _startup_reason(startup: tuple[str, ...]) -> str | None:
    """Start-up code the environment holds. LogoMesh's test interpreter starts without site processing and never
    runs it before its collector; the tests' own child interpreters may."""
    if not startup:
        return None
    return ("start-up code in the environment (not run by LogoMesh's test interpreter; a child interpreter "
            "the tests start may run it): " + "; ".join(startup))


def _missing_reason(missing: tuple[str, ...]) -> str | None:
    """What a partly installed environment lacks, named (the requirements pip failed on, with pip's reason)."""
    if not missing:
        return None
    return "not installed (pip failed on them; the other requirements are installed): " + "; ".join(missing)


@dataclass(frozen=True)
class _Locked:
    """A set ready to install: its entry's tag, the artefacts the cached layer gets (index wheels by their hash,
    built wheels by theirs), the wheel files and what did not build (with the reason)."""

    tag: str
    artefacts: tuple[Artefact, ...]
    built: dict[Artefact, BuiltWheel]
    wheels: dict[str, bytes]
    failed: tuple[str, ...]
    offline: bool = False  # the wheels are all there is (requirement lines that did not resolve)
    log: str = ""  # what the build container said


def _build(sandbox: DockerSandbox, run: _Run, plan: EnvironmentPlan, tree: Tree, spec: TestSpec,
           tag: str) -> Prepared:
    started = time.monotonic()
    requested = tag  # the requirement lines' tag; a resolved set is built under its own
    api = sandbox.client.api
    options = sandbox.setup
    limits = replace(sandbox.limits, memory_mb=max(sandbox.limits.memory_mb, options.memory_mb),
                     pids=max(sandbox.limits.pids, options.pids), cpus=max(sandbox.limits.cpus, 1.0),
                     tmp_mb=max(sandbox.limits.tmp_mb, 1024), fsize_mb=max(sandbox.limits.fsize_mb, 1024),
                     nofile=max(sandbox.limits.nofile, 4096), timeout_seconds=options.timeout_seconds)
    allowed = allowed_for([options.index_url], options.extra_hosts)
    with setup_network(sandbox, run, allowed) as network:
        files = {"requirements.txt": ("\n".join(plan.requirements) + "\n").encode()}
        if plan.uploaded_before and plan.undated:  # resolved among later releases (resolve_script)
            files["undated.txt"] = ("\n".join(undated_lines(plan)) + "\n").encode()
        if options.ca_bundle is not None:
            files["ca.pem"] = options.ca_bundle.read_bytes()
        env = {
            "HTTP_PROXY": network.proxy_url, "HTTPS_PROXY": network.proxy_url, "http_proxy": network.proxy_url,
            "https_proxy": network.proxy_url,
            "NO_PROXY": "", "no_proxy": "", "PIP_INDEX_URL": options.index_url, "PIP_NO_CACHE_DIR": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_PROGRESS_BAR": "off", "PIP_DEFAULT_TIMEOUT": "60",
            "HOME": "/tmp", "TMPDIR": "/tmp",  # noqa: S108 - the container's own tmpfs
            **_env_vars(True), **plain_http_index(options.index_url),
        }
        if options.ca_bundle is not None:
            for variable in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
                env[variable] = SETUP_DIR + "/ca.pem"
        if plan.uploaded_before:  # resolved (and sdists built) among the releases of the base commit's day
            env[UPLOADED_BEFORE] = plan.uploaded_before
        python = f"python{plan.python}" if plan.python else "python3"
        site = f"{ENV_DIR}/lib/python{plan.python or '3'}/site-packages"
        tools = _tools_site(plan.python or "3")
        locked = None
        if not spec.setup_command:
            # resolved, and the set's sdists built, in a throw-away container: the build's code never runs in
            # the container that is committed
            outcome = _resolve(sandbox, run, network, limits, env, python, plan, tag, files)
            if isinstance(outcome, Prepared):
                return outcome  # the resolved set (or, unresolvable, the requirement lines) is cached and verified
            locked = outcome
            if not locked.artefacts:
                why = "installing the environment failed: nothing could be downloaded or built"
                log.info("sandbox environment %s: %s after %.3f s", tag, why, time.monotonic() - started)
                return Prepared(image=sandbox.image_for(plan.python), output=locked.log[-OUTPUT_TAIL:],
                                failure=why + (": " + "; ".join(locked.failed) if locked.failed else ""),
                                report=SetupReport(status="failed", reason=why, refused=network.refused()))
        helper = _setup_container(sandbox, run, plan, network, limits, files, tree if spec.setup_command else None)
        if locked is not None:
            tag = locked.tag
            _put(api, helper, owned_files_tar("setup", {"locked.txt": locked_requirements(
                locked.artefacts, locked.built).encode()}))
            if locked.wheels:
                _put(api, helper, owned_files_tar(WHEELS_DIR.rsplit("/", 1)[1], locked.wheels,
                                                  removable_by=SANDBOX_UID))
        # the resolved set, hash-checked (built wheels by their own hash); unresolvable: together, else one by one
        script = ((locked_install_script(python, ENV_DIR, f"{SETUP_DIR}/locked.txt",
                                         WHEELS_DIR if locked.wheels else None, offline=locked.offline)
                   if locked is not None
                   else install_script(python, ENV_DIR, f"{SETUP_DIR}/requirements.txt"))
                  + f"echo {tools} > {site}/zz-logomesh-tools.pth\n")
        steps: list[tuple[list[str], str]] = [(["sh", "-c", script], "/")]
        if spec.setup_command:
            steps.append((list(spec.setup_command), PREPARED_TREE))
        output = bytearray()
        # a resolved set is pinned by its hashes: the date chose it and is not asked again (part of it may be
        # later releases, resolve_script's undated requirements)
        install_env = _dated(env, None) if locked is not None else env
        for argv, workdir in steps:
            result = asyncio.run(sandbox._exec_in(helper, argv, limits, env=install_env, workdir=workdir))
            output.extend(result.combined)
            if result.timed_out or result.exit_code != 0:
                why = (f"setup timed out after {limits.timeout_seconds:g} s" if result.timed_out
                       else "setup ran out of memory" if result.oom_killed
                       else f"installing the environment failed (exit code {result.exit_code})"
                       if argv[0] == "sh" else f"the setup command failed (exit code {result.exit_code})")
                before = (locked.log.encode() if locked is not None else b"")
                text = clean_test_output(before + bytes(output), OUTPUT_TAIL * 4)[-OUTPUT_TAIL:]
                last = [line for line in text.splitlines() if line.strip()][-3:]
                if locked is not None and locked.failed:
                    last = [*last, "not built: " + "; ".join(locked.failed)]
                log.info("sandbox environment %s: %s after %.3f s", tag, why, time.monotonic() - started)
                return Prepared(image=sandbox.image_for(plan.python),
                                failure=why + (": " + " | ".join(last) if last else ""), output=text,
                                report=SetupReport(status="failed", reason=why, refused=network.refused()))
        refused = network.refused()
        scan = asyncio.run(sandbox._exec_in(helper, [ENV_PYTHON, "-I", "-S", "-c", SCAN, site], limits, env=env,
                                              workdir="/"))
        startup = _startup_found(bytes(scan.stdout).decode("utf-8", "replace"))
        resolved = installed_found(bytes(scan.stdout).decode("utf-8", "replace"))
    missing = not_installed(clean_test_output(bytes(output), OUTPUT_TAIL * 16))
    built = tuple(sorted(b.describe() for b in locked.built.values())) if locked is not None else ()
    if locked is not None:
        missing = (*locked.failed, *missing)
    labels = {**_image_labels(sandbox, plan), ENV_LABEL: plan.key, "org.logomesh.env.python": plan.python or "",
              REFUSED_LABEL: json.dumps(list(refused)), NOT_INSTALLED_LABEL: json.dumps(list(missing)),
              STARTUP_LABEL: json.dumps(list(startup)), RESOLVED_LABEL: json.dumps(list(resolved)),
              BUILT_LABEL: json.dumps(list(built)), TAG_LABEL: tag}
    repository, _, version = tag.partition(":")
    # committed under a tag of this build's own and published under the shared tag only once verified: head, base
    # and guard runs looking the shared tag up meanwhile never find (nor discard) a layer that fails verification
    building = tag if spec.setup_command else f"{tag}-{uuid.uuid4().hex[:12]}"
    try:
        api.kill(helper)
        api.commit(helper, repository=repository, tag=building.partition(":")[2],
                   conf={"Labels": labels, "User": f"{SANDBOX_UID}:{SANDBOX_UID}", "WorkingDir": "/sandbox/repo"})
    except DockerException as exc:
        raise SandboxError(f"the environment could not be committed: {exc}") from exc
    log.info("sandbox environment %s: built in %.3f s", tag, time.monotonic() - started)
    report = SetupReport(status="installed", refused=refused, reason=_reason(missing, startup), startup=startup,
                         resolved=resolved, built=built)
    changed = () if spec.setup_command else verify_image(sandbox, run, building, ENV_DIR, TOOLS_PYTHON, tools)
    if changed:  # the install left files pip did not install: used by this run only (never cached), and named
        run.images.append(building)
        report = report.model_copy(update={"reason": "; ".join(filter(None, [
            report.reason, "files in the environment no distribution installed (not cached): "
            + "; ".join(changed)]))})
        return Prepared(image=building, python=ENV_PYTHON, has_env=True, env=_env_vars(True), report=report)
    if building != tag:
        try:
            api.tag(building, repository, version)
            if locked is not None and locked.tag != requested:  # the requirement lines lead here from now on
                api.tag(building, *requested.partition(":")[::2])
        except DockerException as exc:
            raise SandboxError(f"the environment could not be tagged: {exc}") from exc
        untag(api, building)
    if spec.setup_command:
        run.images.append(tag)  # it holds this tree: used once, removed with the run
        return Prepared(image=tag, python=ENV_PYTHON, has_env=True, env=_env_vars(True), report=report,
                        copy_from=PREPARED_TREE)
    _publish(sandbox, tag)
    evict(sandbox.client, sandbox.setup.cache_mb, keep=tag)
    return Prepared(image=tag, python=ENV_PYTHON, has_env=True, env=_env_vars(True), report=report)


def _setup_container(sandbox: DockerSandbox, run: _Run, plan: EnvironmentPlan, network: SetupNetwork,
                     limits: SandboxLimits, files: dict[str, bytes], tree: Tree | None = None) -> str:
    """A setup container on the setup network, watched (its direct attempts recorded and refused), holding the
    setup files (and ``tree``, for a repository's own setup command)."""
    api = sandbox.client.api
    try:
        container = str(sandbox._create(run, sandbox.image_for(plan.python), network=network.name,
                                        read_only=False, mounts=[], limits=limits))
        run.helpers.append(container)
        api.start(container)
        network.watch(container)
        api.put_archive(container, "/opt/logomesh/envs", owned_files_tar("setup", files))
        if tree is not None:
            api.put_archive(container, "/opt/logomesh/envs", sandbox._tar(tree))
    except (DockerException, OSError) as exc:
        raise SandboxError(f"the setup container could not start: {exc}") from exc
    return container


def _put(api: Any, container: str, archive: bytes) -> None:
    try:
        api.put_archive(container, "/opt/logomesh/envs", archive)
    except DockerException as exc:
        raise SandboxError(f"the setup container could not take the resolved set: {exc}") from exc


def untag(api: Any, reference: str) -> None:
    """Remove the build's own tag: the image stays under the shared one. ``force``, because the verification's
    container was created from this reference and the engine refuses to untag a reference a container names
    (a 409 that made pydantic-settings#941's base run 'not measured'); a tag left behind is only logged."""
    try:
        api.remove_image(reference, force=True)
    except DockerException as exc:
        log.warning("sandbox environment %s: the build's own tag stays: %s", reference, exc)


def _resolve(sandbox: DockerSandbox, run: _Run, network: SetupNetwork, limits: SandboxLimits, env: dict[str, str],
             python: str, plan: EnvironmentPlan, tag: str, files: dict[str, bytes]) -> Prepared | _Locked:
    """Resolve the plan, and build the resolved set's sdists into wheels, in a throw-away setup container
    (``sandbox/resolve.py``): the cached environment of the resolved set when there is one, else the set to
    install; an unresolvable plan is looked up under its requirement lines (``tag``), and when it is not cached
    its lines are made into wheels there (:func:`_wheels_by_line`). The container is removed before anything is
    installed for the cache."""
    builder = _setup_container(sandbox, run, plan, network, limits, files)
    try:
        script = resolve_script(python, f"{SETUP_DIR}/requirements.txt", dated=bool(plan.uploaded_before),
                                undated_file=f"{SETUP_DIR}/undated.txt" if "undated.txt" in files else None,
                                undated_before=plan.undated_before)
        resolving = asyncio.run(sandbox._exec_in(builder, ["sh", "-c", script], limits, env=env, workdir="/"))
        artefacts = parse_resolved(bytes(resolving.stdout).decode("utf-8", "replace"))
        if artefacts is None:
            log.info("sandbox environment %s: the requirements do not resolve to hashed artefacts; installed by "
                     "line", tag)
            return cached(sandbox, run, tag) or _wheels_by_line(sandbox, builder, limits, env, tag,
                                                                undated="undated.txt" in files,
                                                                undated_before=plan.undated_before)
        found = resolved_tag(sandbox, plan, artefacts)
        with _LOCKS_GUARD:
            _RESOLVED[(sandbox.owner, tag)] = found
            while len(_RESOLVED) > RESOLVED_SIZE:
                _RESOLVED.popitem(last=False)
        hit = cached(sandbox, run, found)
        if hit is not None:
            with contextlib.suppress(DockerException):  # these requirement lines lead there from now on
                sandbox.client.api.tag(found, *tag.partition(":")[::2])
            return hit
        sdists = tuple(a for a in artefacts if not is_wheel(a))
        if not sdists:
            return _Locked(found, artefacts, {}, {}, ())
        _put(sandbox.client.api, builder, owned_files_tar(
            "build", {"sdists.txt": locked_requirements(sdists).encode()}))
        building = asyncio.run(sandbox._exec_in(
            builder, ["sh", "-c", wheel_script(RESOLVE_PYTHON, "/opt/logomesh/envs/build/sdists.txt", WHEELS_DIR)],
            limits, env=env, workdir="/"))
        wheels = _wheels_of(sandbox, builder)
        built = built_wheels(sdists, wheels)
        reasons = not_installed(clean_test_output(bytes(building.combined), OUTPUT_TAIL * 16))
        failed = tuple(_build_failure(a, reasons, building.timed_out) for a in sdists if a not in built)
        kept = tuple(a for a in artefacts if is_wheel(a) or a in built)
        return _Locked(found, kept, built, {b.filename: wheels[b.filename] for b in built.values()}, failed)
    finally:
        network.unwatch(builder)
        with contextlib.suppress(DockerException):
            sandbox.client.api.remove_container(builder, force=True)


def _dated(env: dict[str, str], before: str | None) -> dict[str, str]:
    """``env`` with pip's upload-date filter set to ``before``, or without one when None."""
    out = {k: v for k, v in env.items() if k != UPLOADED_BEFORE}
    if before:
        out[UPLOADED_BEFORE] = before
    return out


def _wheels_by_line(sandbox: DockerSandbox, builder: str, limits: SandboxLimits, env: dict[str, str],
                    tag: str, undated: bool = False, undated_before: str | None = None) -> _Locked:
    """Requirement lines that do not resolve as a whole: each line's wheels (with its dependencies; downloaded
    or built) made in the throw-away container, together else line by line; the cached layer installs those
    wheels by the hashes LogoMesh computes, from them alone. ``undated``: the plan's undated lines are made first
    among the releases before ``undated_before`` (today's when None), and the dated lines may take those wheels
    (as :func:`resolve_script` does)."""
    output = bytearray()
    if undated:
        today = _dated(env, undated_before)
        output.extend(asyncio.run(sandbox._exec_in(
            builder, ["sh", "-c", wheel_script(RESOLVE_PYTHON, f"{SETUP_DIR}/undated.txt", WHEELS_DIR,
                                               hashed=False)], limits, env=today, workdir="/")).combined)
    building = asyncio.run(sandbox._exec_in(
        builder, ["sh", "-c", wheel_script(RESOLVE_PYTHON, f"{SETUP_DIR}/requirements.txt", WHEELS_DIR,
                                           hashed=False, links=undated)], limits, env=env, workdir="/"))
    output.extend(building.combined)
    text = clean_test_output(bytes(output), OUTPUT_TAIL * 16)
    wheels = _wheels_of(sandbox, builder)
    artefacts = wheel_artefacts(wheels)
    return _Locked(tag, artefacts, {}, {a.url: wheels[a.url] for a in artefacts}, not_installed(text),
                   offline=True, log=text)


def _build_failure(artefact: Artefact, reasons: tuple[str, ...], timed_out: bool) -> str:
    """``name==version (did not build: pip's last error line)``."""
    pinned = f"{artefact.name}=={artefact.version}"
    for reason in reasons:
        if reason.startswith(pinned + " "):
            said = reason.partition(" (")[2].rstrip(")")
            return f"{pinned} (did not build{': ' + said if said else ''})"
    return f"{pinned} (did not build{': timed out' if timed_out else ''})"


def _wheels_of(sandbox: DockerSandbox, builder: str) -> dict[str, bytes]:
    """The wheel files the build container left in :data:`WHEELS_DIR` (regular files named ``*.whl`` directly in
    it; links and anything else are not taken), read by LogoMesh, at most :data:`MAX_WHEELS_MB` in all."""
    try:
        stream, _stat = sandbox.client.api.get_archive(builder, WHEELS_DIR)
        buffer = io.BytesIO()
        for chunk in stream:
            buffer.write(chunk)
            if buffer.tell() > MAX_WHEELS_MB * 1024 * 1024:
                raise SandboxError(f"the wheels built from the resolved set's sdists exceed {MAX_WHEELS_MB} MB")
    except DockerException:
        return {}  # no wheel was built (the directory may not even exist)
    buffer.seek(0)
    wheels: dict[str, bytes] = {}
    with tarfile.open(fileobj=buffer, mode="r") as archive:
        for member in archive.getmembers():
            parts = member.name.split("/")
            if member.isreg() and len(parts) == 2 and parts[1].endswith(".whl"):
                handle = archive.extractfile(member)
                if handle is not None:
                    wheels[parts[1]] = handle.read()
    return wheels


def _image_labels(sandbox: DockerSandbox, plan: EnvironmentPlan) -> dict[str, str]:
    try:
        return dict(sandbox.client.images.get(sandbox.image_for(plan.python)).labels or {})
    except DockerException:
        return {}


def evict(client: Any, cache_mb: int, keep: str | None = None) -> list[str]:
    """Remove the least recently used environments until the cache fits ``cache_mb``; the removed tags."""
    try:
        images = client.api.images(filters={"label": ENV_LABEL})
    except DockerException:
        return []
    entries: list[tuple[str, list[str], int]] = []
    for info in images:
        tags = sorted(t for t in info.get("RepoTags") or [] if t.startswith(ENV_REPOSITORY + ":"))
        if not tags:
            continue
        try:
            inspected = client.api.inspect_image(info["Id"])
        except DockerException:
            continue
        used = (inspected.get("Metadata") or {}).get("LastTagTime") or inspected.get("Created") or ""
        entries.append((str(used), tags, int(info.get("Size") or 0)))
    entries.sort(reverse=True)
    removed: list[str] = []
    total = 0
    for _used, tags, size in entries:
        total += size
        if total > cache_mb * 1024 * 1024 and keep not in tags:
            for tag in tags:  # the resolved set's tag and the requirement lines' tags leading to it
                with contextlib.suppress(DockerException):
                    client.api.remove_image(tag)
                    removed.append(tag)
    return removed
