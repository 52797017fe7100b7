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
from checks.red.hypotheses import Attack
from checks.red.probe_source import PROBE_TEMPLATE

REWARD_CONFIRMED = 1.0
REWARD_DEVIATION = 0.3
REWARD_REACHED = 0.1
REWARD_UNREACHED = 0.0
SQL_SYNTAX = re.compile(r"syntax error|unrecognized token|unterminated|incomplete input|near \"|"
                        r"unclosed quotation|you have an error in your sql", re.IGNORECASE)
EXHAUSTION_ERRORS = frozenset({"RecursionError", "MemoryError"})


@dataclass(frozen=True)
class ProbeOutcome:
    confirmed: bool
    reward: float
    effect: str


def probe_nonce(seed: int, attack: Attack) -> str:
    """A per-probe nonce fixed by the review's seed and the attack, so the same review builds the same probes."""
    return hashlib.sha256(f"{seed}|{attack.key}".encode()).hexdigest()[:20]


def build_probe(attack: Attack, nonce: str) -> str:
    target = attack.hypothesis.target
    if target is None:
        raise ValueError(f"hypothesis {attack.hypothesis.key} has no callable target to probe")
    config = {
        "nonce": nonce, "kind": attack.hypothesis.kind, "family": attack.family, "path": target.path,
        "qualname": target.qualname, "params": list(target.params), "is_method": target.is_method,
        "argument": attack.argument,
    }
    return PROBE_TEMPLATE.replace("__CONFIG__", repr(json.dumps(config, sort_keys=True)), 1)


def _markers(result: ProbeResult, nonce: str) -> dict[str, dict[str, Any]]:
    prefix = f"LOGOMESH-PROBE-{nonce} "
    phases: dict[str, dict[str, Any]] = {}
    for line in result.stdout.splitlines():
        if not line.startswith(prefix):
            continue
        try:
            data = json.loads(line[len(prefix):])
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("phase"), str):
            phases.setdefault(data["phase"], data)  # first wins: the target cannot overwrite a phase
    return phases


def _error(data: dict[str, Any]) -> str:
    return f"{data.get('error_type', '?')}: {data.get('error', '')}".strip()


def judge_probe(attack: Attack, nonce: str, result: ProbeResult) -> ProbeOutcome:
    """Apply the attack kind's oracle to what the sandbox observed."""
    kind = attack.hypothesis.kind
    phases = _markers(result, nonce)
    imported = phases.get("import")
    if imported is None or not imported.get("ok"):
        if result.timed_out:
            return ProbeOutcome(False, REWARD_UNREACHED, "the module timed out while importing")
        why = _error(imported) if imported else f"no probe output (exit code {result.exit_code})"
        return ProbeOutcome(False, REWARD_UNREACHED, f"could not reach the target: {why}")
    baseline = phases.get("baseline")
    attack_data = phases.get("attack")
    if baseline is None:
        return ProbeOutcome(False, REWARD_UNREACHED, "the target did not complete a benign call")
    if attack_data is None:
        # Only an attack that started counts: building the payload must not be what ran out of memory.
        if kind == "resource-exhaustion" and "payload" in phases and (result.timed_out or result.oom_killed):
            how = "was killed for memory" if result.oom_killed else "ran past the time limit"
            return ProbeOutcome(True, REWARD_CONFIRMED, f"a benign call completed; the payload {how}")
        return ProbeOutcome(False, REWARD_DEVIATION, "the probe died during the attack "
                            f"(exit code {result.exit_code}, timed out {result.timed_out})")
    if kind in ("command-injection", "code-injection", "deserialization") and attack_data.get("canary"):
        return ProbeOutcome(True, REWARD_CONFIRMED, "the payload ran attacker code: the canary file was created")
    if kind == "path-traversal":
        if attack_data.get("returned_secret"):
            return ProbeOutcome(True, REWARD_CONFIRMED, "the target returned the contents of a secret file outside "
                                "its base directory")
        if attack_data.get("secret_intact") is False:
            return ProbeOutcome(True, REWARD_CONFIRMED, "the target overwrote a secret file outside its base "
                                "directory")
    if kind == "sql-injection" and not attack_data.get("ok") and SQL_SYNTAX.search(attack_data.get("error", "")) \
            and not SQL_SYNTAX.search(baseline.get("error", "")):
        return ProbeOutcome(True, REWARD_CONFIRMED, f"the payload changed the SQL's syntax: {_error(attack_data)}")
    if kind == "resource-exhaustion" and attack_data.get("error_type") in EXHAUSTION_ERRORS \
            and baseline.get("ok"):
        return ProbeOutcome(True, REWARD_CONFIRMED, f"a benign call completed; the payload raised "
                            f"{attack_data['error_type']}")
    if attack_data.get("ok") != baseline.get("ok") or attack_data.get("error_type") != baseline.get("error_type"):
        return ProbeOutcome(False, REWARD_DEVIATION, "the payload changed the target's behaviour "
                            f"({_error(attack_data) if not attack_data.get('ok') else 'returned normally'}) "
                            "but the oracle did not fire")
    return ProbeOutcome(False, REWARD_REACHED, "the target ran with the payload; no effect observed")
