"""The probe programs the Red Agent sends into the sandbox, as source text (the programs themselves are real,
linted and type-checked modules under ``checks/red/probe_program/``, never imported).

A probe runs in the head's test environment (the same image, interpreter, variables, paths and working directory
as the project's own test run) and looks like ordinary code: its scratch files have ``tempfile``-style names, it
imports the changed module under its real name, and nothing it leaves in the environment, the paths or the
payloads says "LogoMesh" or "probe". It carries the source of :mod:`checks.red.sightings`, so every shell
command, string-built code or pickle class it provokes — at import or in the call — is seen however it was reached.

Three Python programs share the helpers below (JavaScript and TypeScript targets get the node program
``attack.cjs``, the same phases and markers):

- the *attack* probe imports the changed module, calls one target twice — once with a benign value, once with
  the payload — and prints one marker line per phase (``LOGOMESH-PROBE-<nonce> {json}``) to the output LogoMesh
  reads (the module cannot see it);
- the *import* probe imports each changed module once and reports what ran while it was imported;
- the *race* probe calls one target from several threads at once with forced interleavings and compares the
  outcome with the same calls made one after another (:mod:`checks.red.race`).

Neither judges anything beyond observing the canary/secret files, the SQL the target sent to SQLite and the
sightings; :mod:`checks.red.probes` reads the markers and applies the oracle. They only ever run in the sandbox.
"""

from __future__ import annotations

from importlib import resources

PROGRAM_LINE = "# --- program ---\n"
SIGHTINGS_SOURCE = resources.files("checks.red").joinpath("sightings.py").read_text(encoding="utf-8")


def program_text(name: str) -> str:
    """The program part of ``checks/red/probe_program/<name>.py``: what follows its program line."""
    text = resources.files("checks.red").joinpath("probe_program", f"{name}.py").read_text(encoding="utf-8")
    _, found, program = text.partition(PROGRAM_LINE)
    if not found:
        raise RuntimeError(f"checks/red/probe_program/{name}.py has no program line")
    return program


COMMON = program_text("common")
ATTACK = program_text("attack")
IMPORTS = program_text("imports")
RACE = program_text("race")
PROBE_TEMPLATE = SIGHTINGS_SOURCE + "CONFIG_JSON = __CONFIG__\n" + COMMON + ATTACK
RACE_TEMPLATE = SIGHTINGS_SOURCE + "CONFIG_JSON = __CONFIG__\n" + COMMON + RACE
IMPORT_TEMPLATE = SIGHTINGS_SOURCE + "CONFIG_JSON = __CONFIG__\n" + COMMON + IMPORTS


def node_program_text(name: str) -> str:
    """The program part of ``checks/red/probe_program/<name>.cjs`` (a node program): its first line (``'use
    strict';``) and what follows its program line."""
    text = resources.files("checks.red").joinpath("probe_program", f"{name}.cjs").read_text(encoding="utf-8")
    _, found, program = text.partition(PROGRAM_LINE.replace("#", "//"))
    if not found:
        raise RuntimeError(f"checks/red/probe_program/{name}.cjs has no program line")
    return text.splitlines(keepends=True)[0] + program


NODE_ATTACK_TEMPLATE = node_program_text("attack")
# Go's: a test file of the changed package (``__PACKAGE__``, ``__TARGET__``, ``__TEST__``, ``__CONFIG__`` filled in)
GO_ATTACK_TEMPLATE = resources.files("checks.red").joinpath("probe_program", "attack_go.txt").read_text(
    encoding="utf-8").partition(PROGRAM_LINE.replace("#", "//"))[2]
