"""Probe generation and the oracles that read a probe's result.

:func:`build_probe` turns an :class:`~checks.red.hypotheses.Attack` into the Python source of a probe (the
attack's data is passed as a JSON literal, never spliced into code: paths and names come from the PR).
:func:`judge_probe` reads the probe's marker lines from the sandbox's :class:`~checks.models.ProbeResult` and
applies the oracle of the attack's kind (see :mod:`checks.red.payloads`). Only marker lines carrying this
probe's nonce count, so output the target prints cannot pose as the probe's.

Rewards feed the MCTS: 1.0 confirmed; 0.3 the payload changed the target's behaviour (a different error than a
benign value) without the oracle firing; 0.1 the target ran; 0.0 the module or target could not be reached.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from checks.models import ProbeResult
from checks.red.hypotheses import RACE_KIND, Attack
from checks.red.payloads import javascript_sink
from checks.red.probe_source import (
    GO_ATTACK_TEMPLATE,
    IMPORT_TEMPLATE,
    NODE_ATTACK_TEMPLATE,
    PROBE_TEMPLATE,
    RACE_TEMPLATE,
)
from checks.red.race import judge_race, race_config, reproducer, with_recorded

REWARD_CONFIRMED = 1.0
REWARD_DEVIATION = 0.3
REWARD_REACHED = 0.1
REWARD_UNREACHED = 0.0
SQL_SYNTAX = re.compile(r"syntax error|unrecognized token|unterminated|incomplete input|near \"|"
                        r"unclosed quotation|you have an error in your sql", re.IGNORECASE)
EXHAUSTION_ERRORS = frozenset({"RecursionError", "MemoryError"})
# what a pickle must resolve to run code: a payload that made it look these up reached a loader of untrusted data
CODE_RUNNERS = frozenset({"builtins.exec", "builtins.eval", "os.system", "posix.system", "subprocess.Popen"})


@dataclass(frozen=True)
class ProbeOutcome:
    confirmed: bool
    reward: float
    effect: str
    # dangerous calls of product code seen while the module was imported (shell, string-built code)
    import_sightings: tuple[dict[str, Any], ...] = ()
    # a script that reproduces a confirmed race outside LogoMesh
    reproducer: str | None = None


def probe_nonce(seed: int, attack: Attack | str) -> str:
    """A per-probe nonce fixed by the review's seed and the attack (or another probe's name), so the same review
    builds the same probes."""
    key = attack if isinstance(attack, str) else attack.key
    return hashlib.sha256(f"{seed}|{key}".encode()).hexdigest()[:20]


def _program(template: str, config: dict[str, Any]) -> str:
    return template.replace("__CONFIG__", repr(json.dumps(config, sort_keys=True)), 1)


def runtime(attack: Attack) -> str:
    """What runs the attack's probe: ``node`` for a JavaScript/TypeScript sink, ``go`` for a Go sink (a test file of
    its package), else ``python``."""
    sink = attack.hypothesis.sink
    return "node" if javascript_sink(sink) else "go" if sink.startswith("go-") else "python"


def go_probe_file(nonce: str) -> str:
    """The name of a Go probe's test file in the target's package."""
    return f"zz_{nonce[:8]}_test.go"


def build_import_probe(paths: list[str], nonce: str) -> str:
    """A probe that imports each changed module once and reports what ran while it was imported."""
    return _program(IMPORT_TEMPLATE, {"nonce": nonce, "paths": paths})


def build_probe(attack: Attack, nonce: str, seed: int = 0, timeout_seconds: float | None = None) -> str:
    """The program of ``attack``'s probe; ``timeout_seconds`` (the probe's) bounds the trials of a race probe."""
    target = attack.hypothesis.target
    if target is None:
        raise ValueError(f"hypothesis {attack.hypothesis.key} has no callable target to probe")
    if attack.hypothesis.kind == RACE_KIND:
        return _program(RACE_TEMPLATE, race_config(attack, nonce, seed, timeout_seconds))
    config = {
        "nonce": nonce, "kind": attack.hypothesis.kind, "family": attack.family, "path": target.path,
        "qualname": target.qualname, "params": list(target.params), "is_method": target.is_method,
        "argument": attack.argument,
    }
    literal = json.dumps(json.dumps(config, sort_keys=True))  # a JSON string literal is a JavaScript or Go one
    if runtime(attack) == "node":
        literal = json.dumps(json.dumps({**config, "route": list(target.route) if target.route else None},
                                        sort_keys=True))
        return NODE_ATTACK_TEMPLATE.replace("__CONFIG__", literal, 1)
    if runtime(attack) == "go":  # qualname: package.Function or package.Type.Method (checks.red.go_targets)
        literal = json.dumps(json.dumps({**config, "keys": list(target.keys)}, sort_keys=True))
        package, _, function = target.qualname.partition(".")
        if target.is_method:  # a method value of a new zero value of its type
            owner, _, method = function.rpartition(".")
            function = f"new({owner}).{method}"
        return (GO_ATTACK_TEMPLATE.replace("__PACKAGE__", package, 1).replace("__TARGET__", function)
                .replace("__TEST__", f"TestZz{nonce[:10]}", 1).replace("__CONFIG__", literal, 1))
    return _program(PROBE_TEMPLATE, config)


def marker_lines(result: ProbeResult, nonce: str) -> list[dict[str, Any]]:
    """This probe's marker records, in order; lines without its nonce are the target's output and ignored."""
    prefix = f"LOGOMESH-PROBE-{nonce} "
    found: list[dict[str, Any]] = []
    for line in result.stdout.splitlines():
        if not line.startswith(prefix):
            continue
        try:
            data = json.loads(line[len(prefix):])
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("phase"), str):
            found.append(data)
    return found


def _markers(result: ProbeResult, nonce: str) -> dict[str, dict[str, Any]]:
    phases: dict[str, dict[str, Any]] = {}
    for data in marker_lines(result, nonce):
        phases.setdefault(data["phase"], data)  # first wins: the target cannot overwrite a phase
    return phases


def sightings_of(data: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The well-formed sightings of one marker record (the probe shares its process with PR code)."""
    found = []
    for item in (data or {}).get("sightings") or []:
        if isinstance(item, dict) and isinstance(item.get("event"), str) and isinstance(item.get("path"), str) \
                and isinstance(item.get("line"), int):
            found.append({"event": item["event"], "path": item["path"], "line": item["line"],
                          "detail": str(item.get("detail") or "")[:300]})
    return found


def sql_injected(statement: str, payload: str) -> bool:
    """True when ``payload`` reached ``statement`` as SQL syntax: it occurs there, and not wholly inside one
    terminated string literal or quoted identifier (escaped quotes — ``''`` — stay inside their literal).

    A parameterised query never carries the payload's text; a correctly escaped one carries it inside a literal.
    """
    if not payload:
        return False
    # which literal (0 = none) each character belongs to; a literal still open at the end is broken (-1)
    owner = [0] * len(statement)
    literal, quote, index, i = 0, "", 0, 0
    closers = {"'": "'", '"': '"', "`": "`", "[": "]"}
    while i < len(statement):
        char = statement[i]
        if quote:
            owner[i] = literal
            if char == quote:
                if i + 1 < len(statement) and statement[i + 1] == quote and quote != "]":
                    owner[i + 1] = literal
                    i += 2
                    continue
                quote = ""
        elif char in closers:
            index += 1
            literal, quote = index, closers[char]
            owner[i] = literal
        i += 1
    if quote:
        owner = [-1 if o == literal else o for o in owner]
    start = statement.find(payload)
    while start != -1:
        span = owner[start:start + len(payload)]
        if span[0] <= 0 or any(o != span[0] for o in span):
            return True
        start = statement.find(payload, start + 1)
    return False


def _error(data: dict[str, Any]) -> str:
    return f"{data.get('error_type', '?')}: {data.get('error', '')}".strip()


def judge_probe(attack: Attack, nonce: str, result: ProbeResult) -> ProbeOutcome:
    """Apply the attack kind's oracle to what the sandbox observed."""
    kind = attack.hypothesis.kind
    phases = _markers(result, nonce)
    imported = phases.get("import")
    sightings = tuple(sightings_of(imported))
    if imported is None or not imported.get("ok"):
        if result.timed_out:
            return ProbeOutcome(False, REWARD_UNREACHED, "the module timed out while importing", sightings)
        why = _error(imported) if imported else f"no probe output (exit code {result.exit_code})"
        return ProbeOutcome(False, REWARD_UNREACHED, f"could not reach the target: {why}", sightings)
    if kind == RACE_KIND:
        return _judge_race(attack, with_recorded(phases.get("race"), phases.get("recorded")), result, sightings)
    baseline = phases.get("baseline")
    attack_data = phases.get("attack")
    if baseline is None:
        return ProbeOutcome(False, REWARD_UNREACHED, "the target did not complete a benign call", sightings)
    if attack_data is None:
        # Only an attack that started counts: building the payload must not be what ran out of memory.
        if kind == "resource-exhaustion" and "payload" in phases and (result.timed_out or result.oom_killed):
            how = "was killed for memory" if result.oom_killed else "ran past the time limit"
            return ProbeOutcome(True, REWARD_CONFIRMED, f"a benign call completed; the payload {how}", sightings)
        return ProbeOutcome(False, REWARD_DEVIATION, "the probe died during the attack "
                            f"(exit code {result.exit_code}, timed out {result.timed_out})", sightings)
    if kind in ("command-injection", "code-injection", "deserialization") and attack_data.get("canary"):
        return ProbeOutcome(True, REWARD_CONFIRMED, "the payload ran attacker code: the canary file was created",
                            sightings)
    resolved = {s["detail"] for s in sightings_of(attack_data) if s["event"] == "pickle.find_class"}
    if kind == "deserialization" and resolved & CODE_RUNNERS:
        return ProbeOutcome(True, REWARD_CONFIRMED, "the payload reached a pickle loader: it resolved "
                            f"{sorted(resolved & CODE_RUNNERS)[0]}, which runs attacker code", sightings)
    marker = (phases.get("payload") or {}).get("sql_payload")
    if kind == "sql-injection" and isinstance(marker, str):
        for statement in attack_data.get("sql") or []:
            if isinstance(statement, str) and sql_injected(statement, marker):
                return ProbeOutcome(True, REWARD_CONFIRMED, "the payload reached the SQL as syntax, not as a value: "
                                    f"{statement[:200]}", sightings)
    if kind == "path-traversal":
        if attack_data.get("returned_secret"):
            return ProbeOutcome(True, REWARD_CONFIRMED, "the target returned the contents of a secret file outside "
                                "its base directory", sightings)
        if attack_data.get("secret_intact") is False:
            return ProbeOutcome(True, REWARD_CONFIRMED, "the target overwrote a secret file outside its base "
                                "directory", sightings)
        if attack_data.get("opened_secret") is True:
            return ProbeOutcome(True, REWARD_CONFIRMED, "the target opened a secret file outside its base "
                                "directory by the path the payload gave it", sightings)
    if kind == "sql-injection" and not attack_data.get("ok") and SQL_SYNTAX.search(attack_data.get("error", "")) \
            and not SQL_SYNTAX.search(baseline.get("error", "")):
        return ProbeOutcome(True, REWARD_CONFIRMED, f"the payload changed the SQL's syntax: {_error(attack_data)}",
                            sightings)
    if kind == "resource-exhaustion" and attack_data.get("error_type") in EXHAUSTION_ERRORS \
            and baseline.get("ok"):
        return ProbeOutcome(True, REWARD_CONFIRMED, f"a benign call completed; the payload raised "
                            f"{attack_data['error_type']}", sightings)
    if attack_data.get("ok") != baseline.get("ok") or attack_data.get("error_type") != baseline.get("error_type"):
        return ProbeOutcome(False, REWARD_DEVIATION, "the payload changed the target's behaviour "
                            f"({_error(attack_data) if not attack_data.get('ok') else 'returned normally'}) "
                            "but the oracle did not fire", sightings)
    return ProbeOutcome(False, REWARD_REACHED, "the target ran with the payload; no effect observed", sightings)


def _judge_race(attack: Attack, data: dict[str, Any] | None, result: ProbeResult,
                sightings: tuple[dict[str, Any], ...]) -> ProbeOutcome:
    if data is None:
        why = "ran past the time limit" if result.timed_out else f"exit code {result.exit_code}"
        return ProbeOutcome(False, REWARD_DEVIATION, f"the race probe died ({why})", sightings)
    confirmed, effect = judge_race(data)
    if confirmed:
        return ProbeOutcome(True, REWARD_CONFIRMED, effect, sightings, reproducer(attack, data))
    return ProbeOutcome(False, REWARD_REACHED, effect, sightings)
