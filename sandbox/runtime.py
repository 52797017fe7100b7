"""The OCI runtime every sandbox container runs under (``LOGOMESH_SANDBOX_RUNTIME``), and the check that the
Docker engine knows it.

``runc`` (the default) shares the host kernel with a PR's code behind namespaces, seccomp, no capabilities and
cgroup limits. ``runsc`` (gVisor) puts a user-space kernel between them; ``kata-runtime`` a lightweight VM;
``sysbox-runc`` a user-namespaced container fit to run an inner engine without ``--privileged``. What each
protects, and where it runs on Kubernetes, is in docs/deploy.md.

The engine must have the runtime registered (``/etc/docker/daemon.json`` → ``runtimes``; ``docker info`` lists
them): a runtime it does not know fails every container, so the worker checks at start-up and is not ready,
with the fix named, rather than failing each review.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from sandbox.errors import SandboxUnavailable

SandboxRuntime = Literal["runc", "runsc", "kata-runtime", "sysbox-runc"]
SANDBOX_RUNTIMES: tuple[str, ...] = get_args(SandboxRuntime)
DEFAULT_RUNTIME: SandboxRuntime = "runc"


def registered_runtimes(info: dict[str, Any]) -> tuple[str, ...]:
    """The runtime names a ``docker info`` answer lists, sorted."""
    runtimes = info.get("Runtimes")
    return tuple(sorted(runtimes)) if isinstance(runtimes, dict) else ()


def runtime_missing(info: dict[str, Any], runtime: str) -> str | None:
    """Why ``runtime`` cannot run sandboxes on the engine that answered ``info``, or None when it can."""
    known = registered_runtimes(info)
    if runtime in known:
        return None
    listed = ", ".join(known) or "none"
    return (f"the Docker engine has no runtime {runtime!r} (LOGOMESH_SANDBOX_RUNTIME; registered: {listed}): "
            f"install it and register it in the engine's daemon.json 'runtimes', or set "
            f"LOGOMESH_SANDBOX_RUNTIME={DEFAULT_RUNTIME}")


def require_runtime(client: Any, runtime: str) -> None:
    """Raise :class:`SandboxUnavailable` naming the fix when the engine behind ``client`` lacks ``runtime``."""
    reason = runtime_missing(client.info(), runtime)
    if reason is not None:
        raise SandboxUnavailable(reason)
