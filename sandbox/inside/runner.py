"""The test runner that executes *inside* the sandbox container (standard library only, Python >= 3.8).

It is copied to ``/sandbox/logomesh`` (owned by root, read-only, outside the repository tree) with its
``config.json`` and started as ``python -I -S /sandbox/logomesh/runner.py /sandbox/logomesh/config.json``: no
``PYTHONPATH``, no site processing (no ``.pth`` file, ``sitecustomize`` or ``usercustomize`` of the environment
runs in it), no script directory on the path, so nothing in the repository or its dependencies can shadow a
module it imports or run before it. It

1. installs the project in editable mode into ``/sandbox/site`` (offline: the environment already holds the
   build backend), so generated files such as ``_version.py`` exist and src layouts import;
2. starts ``launch.py`` in a child process, which runs pytest in-process with LogoMesh's collector
   (``collector.py``) as a plugin object: the outcomes come from the collector, never from a report file the
   repository's hooks could write, and never from an exit code the repository can choose;
3. falls back to ``unittest`` discovery only when the collector saw pytest collect nothing and no error;
4. optionally runs mutants (``mutate`` mode): each changed line is mutated in place and only the tests that
   covered it run against it; a mutant is killed when one of them fails;
5. ends every other process of the sandbox user, waits until they are gone, and writes its results as the last
   bytes of its standard output, framed (``\n<RESULTS_MARK> <length>\n`` after the JSON). The tests' output
   goes to standard error: no process but the runner holds its standard output, and none is left to write
   after it;
6. or, in ``probe`` mode, after the same install, runs one red-team probe through ``launch.py`` — the same
   interpreter, variables, path and working directory as the tests — with its output passed straight through
   (a probe reports as it goes: a kill must not lose what it saw) and its own time limit (exit code 124).

Everything here runs next to PR code and proves nothing by itself: the host treats the results as hostile.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

HERE = "/sandbox/logomesh"
OUT = "/sandbox/out"
SITE = "/sandbox/site"
RESULTS_MARK = b"LOGOMESH-RESULTS"
# the collector's record goes to a name chosen per run, so nothing written ahead of time can stand in for it
COLLECTED = OUT + "/collected-" + os.urandom(8).hex() + ".json"
TAIL = 3000
# no site processing (-S): launch.py builds the path itself and runs none of the environment's start-up code
LAUNCH = (sys.executable, "-I", "-S", HERE + "/launch.py")


def tail(data: bytes) -> str:
    return data.decode("utf-8", "replace")[-TAIL:]


def install_project(config: dict, env: dict) -> dict:
    if not config.get("install_project"):
        return {"status": "skipped", "reason": "no build metadata (pyproject.toml, setup.py or setup.cfg)"}
    argv = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
            "--no-cache-dir", "--disable-pip-version-check", "--quiet", "--prefix", SITE, "-e", "."]
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                              timeout=config.get("install_timeout", 300))
    except subprocess.TimeoutExpired:
        return {"status": "failed", "reason": "the editable install timed out"}
    outcome = {"status": "ok" if proc.returncode == 0 else "failed",
               "seconds": round(time.monotonic() - started, 3)}
    if proc.returncode != 0:
        outcome["reason"] = tail(proc.stdout)
    return outcome


def child_env(config: dict) -> dict:
    env = dict(os.environ)
    for name in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT"):
        env.pop(name, None)
    env.update(config.get("env") or {})
    return env


def launch_file(launch: dict) -> str:
    """``launch.py``'s argument: always ``@<file>``, so a test run and a probe start with the same command line."""
    path = OUT + "/launch-" + os.urandom(8).hex() + ".json"
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(launch, handle)
    return "@" + path


def run_pytest(config: dict, env: dict, args: list, extra: dict, timeout: float | None) -> tuple:
    """One pytest run through launch.py; (exit code, the collector's record or None, output tail)."""
    with contextlib.suppress(OSError):
        os.unlink(COLLECTED)
    launch = {"import_roots": config.get("import_roots") or [], "site": SITE, "args": args, "out": COLLECTED}
    launch.update(extra)
    argv = [*LAUNCH, launch_file(launch)]
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=timeout)
        code, output = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as exc:
        code, output = None, exc.stdout or b""
    record = None
    try:
        with open(COLLECTED, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        record = None
    return code, record, output


def run_unittest(env: dict) -> tuple:
    argv = [*LAUNCH, json.dumps({"unittest": True, "out": COLLECTED,
                                                                 "import_roots": [], "site": SITE})]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        with open(COLLECTED, encoding="utf-8") as handle:
            return proc.returncode, json.load(handle), proc.stdout
    except (OSError, ValueError):
        return proc.returncode, None, proc.stdout


def mutate(config: dict, env: dict, results: dict) -> None:
    """Pick, for each mutant, the passing tests that covered its line; ``launch.py`` runs them (forked per mutant)."""
    record = results.get("record") or {}
    coverage = record.get("coverage") or {}
    # a test that fails at head detects nothing: only passing tests can notice a mutant
    passing = {t.get("id") for t in record.get("tests") or [] if t.get("outcome") == "passed"}
    verdicts, jobs = [], []
    for mutant in config.get("mutants") or []:
        path, line = mutant["path"], str(mutant["line"])
        covering = set(coverage.get(path, {}).get(line, []))
        tests = sorted(covering & passing)
        if not tests and "<import>" in covering:
            # a module-level line (a constant table, a default) runs at import, before any test: every passing
            # test may depend on it
            tests = sorted(passing)
        if tests:
            jobs.append({"id": mutant["id"], "path": path, "source": mutant["source"], "tests": tests})
        else:
            verdicts.append({"id": mutant["id"], "status": "uncovered", "tests_run": 0})
    if jobs:
        nonce = os.urandom(8).hex()
        jobs_path, out = f"{OUT}/mutants-{nonce}.json", f"{OUT}/verdicts-{nonce}.json"
        with open(jobs_path, "w", encoding="utf-8") as handle:
            json.dump(jobs, handle)
        seconds = float(config.get("mutation_seconds") or 0)
        launch = {"import_roots": config.get("import_roots") or [], "site": SITE, "mutate": jobs_path, "out": out,
                  "seconds": seconds}
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run([*LAUNCH, json.dumps(launch)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                           timeout=seconds + float(config.get("mutation_grace") or 30))
        try:
            with open(out, encoding="utf-8") as handle:
                done = {v["id"]: v for v in json.load(handle) if isinstance(v, dict)}
        except (OSError, ValueError):
            done = {}
        for job in jobs:
            verdicts.append(done.get(job["id"], {"id": job["id"], "status": "not_run", "tests_run": 0}))
    results["mutants"] = verdicts


PROBE_TIMED_OUT = 124


def probe(config: dict, env: dict) -> int:
    install = install_project(config, env)
    if install.get("status") == "failed":
        sys.stderr.write("the editable install failed: " + str(install.get("reason", ""))[-500:] + "\n")
    launch = {"import_roots": config.get("import_roots") or [], "site": SITE, "probe": config["probe"]}
    sys.stdout.flush()
    try:
        code = subprocess.run([*LAUNCH, launch_file(launch)], env=env,
                              timeout=float(config.get("probe_timeout") or 10)).returncode
    except subprocess.TimeoutExpired:
        code = PROBE_TIMED_OUT
    with contextlib.suppress(OSError):  # nothing the probe started outlives it
        os.kill(-1, signal.SIGKILL)
    return 128 - code if code < 0 else code  # killed by a signal: the shell's 128 + signal number


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    env = child_env(config)
    if config.get("probe"):
        sys.exit(probe(config, env))
    results: dict = {"runner": "pytest"}
    command = config.get("command")
    if command:
        results["runner"] = "custom"
        try:
            # standard output is the results' channel: the command writes both its streams to standard error
            results["exit_code"] = subprocess.call(list(command), env=env, stdout=sys.stderr.fileno())
        except OSError as exc:
            results["exit_code"] = 127
            results["error"] = f"command not runnable: {exc}"
        write(results)
        return
    results["install"] = install_project(config, env)
    code, record, output = run_pytest(config, env, list(config.get("pytest_args") or []),
                                      {"coverage_paths": config.get("coverage_paths") or [],
                                       "coverage_lines": config.get("coverage_lines")}, timeout=None)
    results["exit_code"] = code
    results["record"] = record
    sys.stderr.write(output.decode("utf-8", "replace"))
    sys.stderr.flush()
    if record is not None and not record.get("tests") and not record.get("errors") and config.get("unittest"):
        code, unit_record, unit_output = run_unittest(env)
        if unit_record is not None and unit_record.get("tests"):
            results.update({"runner": "unittest", "exit_code": code, "record": unit_record})
            sys.stderr.write(unit_output.decode("utf-8", "replace"))
    if record is not None and config.get("mutants"):
        results["mutation_started"] = True
        mutate(config, env, results)
    if record is not None:
        record.pop("coverage", None)  # read here, for the mutants alone: the host never needs it
    write(results)


def others_alive() -> bool:
    """Whether a process of this user other than the runner still runs (a killed one may be mid-write)."""
    me, uid = os.getpid(), os.getuid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{name}/status", encoding="utf-8") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
            if fields.get("Uid", "").split()[:1] == [str(uid)] and not fields.get("State", "").strip().startswith(
                    ("Z", "X")):
                return True
    return False


def write(results: dict) -> None:
    # first stop every other process of the sandbox user (a test may leave one behind to write a forgery after)
    sys.stderr.flush()
    deadline = time.monotonic() + 5
    while True:
        # again while any is left: a child forked while the first signal went round was not in its list
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL)
        if not others_alive() or time.monotonic() > deadline:
            break
        time.sleep(0.002)
    payload = json.dumps(results).encode("utf-8")
    frame = b"\n" + payload + b"\n" + RESULTS_MARK + b" " + str(len(payload)).encode() + b"\n"
    view = memoryview(frame)
    while view:  # the host reads the last bytes of the stream: these, written after every other process ended
        view = view[os.write(1, view):]


if __name__ == "__main__":
    main()
    sys.exit(0)  # the host trusts the results only after this exit: a killed runner exits otherwise
