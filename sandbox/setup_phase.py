"""The setup phase: build a project's environment where the only network is the package index, and cache it.

For an :class:`~checks.models.EnvironmentPlan` with requirements (or a repository's own ``test.setup`` command):

1. a Docker network (:mod:`sandbox.setup_network`) whose only reachable address is the egress proxy
   (:mod:`sandbox.egress`, a container of its own) that lets through only the index's hosts;
2. a setup container on that network (writable root, its own limits and timeout) that makes a venv of the chosen
   interpreter at ``/opt/logomesh/envs/project``, installs the requirements through the proxy with the
   operator's CA bundle, and appends LogoMesh's tools (pytest, coverage) to its path *after* the project's pins;
3. the container committed as ``logomesh-env:<key>`` — the key hashes the image, the interpreter, the requirement
   lines and the index — so base and head runs, and later reviews, reuse it. The cache is bounded in MB; the
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
import json
import logging
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
from sandbox.environment import install_script, not_installed
from sandbox.errors import SandboxError
from sandbox.limits import SANDBOX_UID, SandboxLimits
from sandbox.redact import clean_test_output
from sandbox.resolve import (
    Artefact,
    built_from_source,
    locked_install_script,
    locked_requirements,
    parse_resolved,
    resolve_script,
    resolved_key,
)
from sandbox.setup_network import plain_http_index, setup_network
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
OUTPUT_TAIL = 4000
ENV_LAYOUT = 3  # what a cached environment holds (3: with the installed distributions' label); older entries
# are not used
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
    """The cached environment's tag this sandbox uses for ``plan``: its resolved set's once resolved, else the
    requirement lines' one."""
    tag = env_tag(sandbox, plan, spec, tree)
    with _LOCKS_GUARD:
        return _RESOLVED.get((sandbox.owner, tag), tag)


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
        # this sandbox resolved the plan before (head, base and guard often share it): no second resolution
        with _LOCKS_GUARD:
            known = _RESOLVED.get((sandbox.owner, tag))
        hit = cached(sandbox, run, known) if known else None
        if hit is not None:
            return hit
    return _build(sandbox, run, plan, tree, spec, tag)


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
            sandbox.client.api.remove_image(tag)
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
            sandbox.client.api.remove_image(tag, force=True)
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
                                       resolved=_list_label(image.labels, RESOLVED_LABEL)))


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


def _startup_found(text: str, built: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The scan's findings, one sentence each: what the environment would run at start-up, and whose it is. A file
    no distribution's RECORD lists was left by something that ran during the install: the builds of the set's
    sdists (``built``, ``name==version``) are named with it."""
    unowned = "listed by no distribution" + (f"; built from source here: {', '.join(built)}" if built else "")
    found: list[str] = []
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        try:
            fields = json.loads(rest)
        except ValueError:
            continue
        if not isinstance(fields, list) or len(fields) < 2:
            continue
        owner = f"from {fields[1]}" if fields[1] else unowned
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


def _build(sandbox: DockerSandbox, run: _Run, plan: EnvironmentPlan, tree: Tree, spec: TestSpec,
           tag: str) -> Prepared:
    started = time.monotonic()
    api = sandbox.client.api
    options = sandbox.setup
    limits = replace(sandbox.limits, memory_mb=max(sandbox.limits.memory_mb, options.memory_mb),
                     pids=max(sandbox.limits.pids, options.pids), cpus=max(sandbox.limits.cpus, 1.0),
                     tmp_mb=max(sandbox.limits.tmp_mb, 1024), fsize_mb=max(sandbox.limits.fsize_mb, 1024),
                     nofile=max(sandbox.limits.nofile, 4096), timeout_seconds=options.timeout_seconds)
    allowed = allowed_for([options.index_url], options.extra_hosts)
    with setup_network(sandbox, run, allowed) as network:
        try:
            helper = sandbox._create(run, sandbox.image_for(plan.python), network=network.name, read_only=False,
                                     mounts=[], limits=limits)
            run.helpers.append(helper)
            api.start(helper)
            network.watch(helper)  # its direct attempts, recorded and refused
            files = {"requirements.txt": ("\n".join(plan.requirements) + "\n").encode()}
            if options.ca_bundle is not None:
                files["ca.pem"] = options.ca_bundle.read_bytes()
            api.put_archive(helper, "/opt/logomesh/envs", owned_files_tar("setup", files))
            if spec.setup_command:
                api.put_archive(helper, "/opt/logomesh/envs", sandbox._tar(tree))
        except (DockerException, OSError) as exc:
            raise SandboxError(f"the setup container could not start: {exc}") from exc
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
        python = f"python{plan.python}" if plan.python else "python3"
        site = f"{ENV_DIR}/lib/python{plan.python or '3'}/site-packages"
        tools = _tools_site(plan.python or "3")
        locked = None if spec.setup_command else _resolve(sandbox, run, helper, limits, env, python, plan, tag)
        if isinstance(locked, Prepared):
            return locked  # the resolved set (or, unresolvable, the requirement lines) is cached and verified
        built: tuple[str, ...] = ()
        if locked is not None:
            tag = locked[0]
            built = built_from_source(locked[1])
        # the resolved set, hash-checked; unresolvable: together, else one by one (a failing line named)
        script = ((locked_install_script(python, ENV_DIR, f"{SETUP_DIR}/locked.txt") if locked is not None
                   else install_script(python, ENV_DIR, f"{SETUP_DIR}/requirements.txt"))
                  + f"echo {tools} > {site}/zz-logomesh-tools.pth\n")
        steps: list[tuple[list[str], str]] = [(["sh", "-c", script], "/")]
        if spec.setup_command:
            steps.append((list(spec.setup_command), PREPARED_TREE))
        output = bytearray()
        for argv, workdir in steps:
            result = asyncio.run(sandbox._exec_in(helper, argv, limits, env=env, workdir=workdir))
            output.extend(result.combined)
            if result.timed_out or result.exit_code != 0:
                why = (f"setup timed out after {limits.timeout_seconds:g} s" if result.timed_out
                       else "setup ran out of memory" if result.oom_killed
                       else f"installing the environment failed (exit code {result.exit_code})"
                       if argv[0] == "sh" else f"the setup command failed (exit code {result.exit_code})")
                text = clean_test_output(bytes(output), OUTPUT_TAIL * 4)[-OUTPUT_TAIL:]
                last = [line for line in text.splitlines() if line.strip()][-3:]
                log.info("sandbox environment %s: %s after %.3f s", tag, why, time.monotonic() - started)
                return Prepared(image=sandbox.image_for(plan.python),
                                failure=why + (": " + " | ".join(last) if last else ""), output=text,
                                report=SetupReport(status="failed", reason=why, refused=network.refused()))
        refused = network.refused()
        scan = asyncio.run(sandbox._exec_in(helper, [ENV_PYTHON, "-I", "-S", "-c", SCAN, site], limits, env=env,
                                              workdir="/"))
        startup = _startup_found(bytes(scan.stdout).decode("utf-8", "replace"), built)
        resolved = installed_found(bytes(scan.stdout).decode("utf-8", "replace"))
    missing = not_installed(clean_test_output(bytes(output), OUTPUT_TAIL * 16))
    labels = {**_image_labels(sandbox, plan), ENV_LABEL: plan.key, "org.logomesh.env.python": plan.python or "",
              REFUSED_LABEL: json.dumps(list(refused)), NOT_INSTALLED_LABEL: json.dumps(list(missing)),
              STARTUP_LABEL: json.dumps(list(startup)), RESOLVED_LABEL: json.dumps(list(resolved))}
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
                         resolved=resolved)
    changed = () if spec.setup_command else verify_image(sandbox, run, building, ENV_DIR, TOOLS_PYTHON, tools)
    if changed:  # the build left files pip did not install: used by this run only (never cached), and named
        run.images.append(building)
        report = report.model_copy(update={"reason": "; ".join(filter(None, [
            report.reason, "files in the environment no distribution installed (not cached"
            + (f"; built from source here: {', '.join(built)}" if built else "") + "): " + "; ".join(changed)]))})
        return Prepared(image=building, python=ENV_PYTHON, has_env=True, env=_env_vars(True), report=report)
    if building != tag:
        try:
            api.tag(building, repository, version)
            api.remove_image(building)  # only the build's own tag goes: the image stays under the shared one
        except DockerException as exc:
            raise SandboxError(f"the environment could not be tagged: {exc}") from exc
    if spec.setup_command:
        run.images.append(tag)  # it holds this tree: used once, removed with the run
        return Prepared(image=tag, python=ENV_PYTHON, has_env=True, env=_env_vars(True), report=report,
                        copy_from=PREPARED_TREE)
    _publish(sandbox, tag)
    evict(sandbox.client, sandbox.setup.cache_mb, keep=tag)
    return Prepared(image=tag, python=ENV_PYTHON, has_env=True, env=_env_vars(True), report=report)


def _resolve(sandbox: DockerSandbox, run: _Run, helper: str, limits: SandboxLimits, env: dict[str, str],
             python: str, plan: EnvironmentPlan, tag: str) -> Prepared | tuple[str, tuple[Artefact, ...]] | None:
    """Resolve the plan in the setup container (``sandbox/resolve.py``): the cached environment of the resolved
    set when there is one, else ``(its tag, the set)`` with the hashed requirements file in place; an unresolvable
    plan is looked up under its requirement lines (``tag``), and None when it is not cached either."""
    script = resolve_script(python, f"{SETUP_DIR}/requirements.txt")
    resolving = asyncio.run(sandbox._exec_in(helper, ["sh", "-c", script], limits, env=env, workdir="/"))
    artefacts = parse_resolved(bytes(resolving.stdout).decode("utf-8", "replace"))
    if artefacts is None:
        log.info("sandbox environment %s: the requirements do not resolve to hashed artefacts; installed by line", tag)
        return cached(sandbox, run, tag)
    found = resolved_tag(sandbox, plan, artefacts)
    with _LOCKS_GUARD:
        _RESOLVED[(sandbox.owner, tag)] = found
        while len(_RESOLVED) > RESOLVED_SIZE:
            _RESOLVED.popitem(last=False)
    hit = cached(sandbox, run, found)
    if hit is not None:
        return hit
    try:
        sandbox.client.api.put_archive(helper, "/opt/logomesh/envs", owned_files_tar(
            "setup", {"locked.txt": locked_requirements(artefacts).encode()}))
    except DockerException as exc:
        raise SandboxError(f"the setup container could not take the resolved requirements: {exc}") from exc
    return found, artefacts


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
    entries: list[tuple[str, str, int]] = []
    for info in images:
        tags = [t for t in info.get("RepoTags") or [] if t.startswith(ENV_REPOSITORY + ":")]
        if not tags:
            continue
        try:
            inspected = client.api.inspect_image(info["Id"])
        except DockerException:
            continue
        used = (inspected.get("Metadata") or {}).get("LastTagTime") or inspected.get("Created") or ""
        entries.append((str(used), tags[0], int(info.get("Size") or 0)))
    entries.sort(reverse=True)
    removed: list[str] = []
    total = 0
    for _used, tag, size in entries:
        total += size
        if total > cache_mb * 1024 * 1024 and tag != keep:
            with contextlib.suppress(DockerException):
                client.api.remove_image(tag)
                removed.append(tag)
    return removed
