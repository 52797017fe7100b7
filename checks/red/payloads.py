"""Payload families the probes deliver, per attack class, and the oracle each one is judged by.

The payload itself is built *inside* the probe (so crafted pickles and deep structures are real objects); here
each family has a name, a one-line description for the evidence, and the oracle that confirms it:

================  ==========================================  =============================================
kind              families                                    oracle
================  ==========================================  =============================================
command-inj.      semicolon, subshell, backtick, quote-break  a canary file the injected command creates
code-injection    expression, getattr-system, statement       a canary file the injected code writes
deserialization   pickle-bytes, pickle-base64, pickle-stream, a canary file the crafted object's
                  marshal-code, yaml-tag                      ``__reduce__`` / YAML tag / code writes on load,
                                                              or the pickle resolved ``builtins.exec``
sql-injection     quote, double-quote, unbalanced, tautology, the SQL the target sent to SQLite carries the
                  numeric                                     payload as syntax, not inside one literal; or
                                                              the DB raises a *syntax* error for the payload
                                                              and not for a benign value
path-traversal    dotdot, absolute                            a secret file outside the base is read (its
                                                              nonce comes back) or overwritten
resource-exh.     deep-list, deep-dict, long-string           RecursionError / MemoryError, a timeout or an
                                                              OOM kill after a benign call completed
unlocked-shared-  opcode-yield, line-yield                    threads (processes, for a file) released
state                                                         together give a result, a final state or an
                                                              exception that the same calls one after another
                                                              never give (checks.red.race)
================  ==========================================  =============================================
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    prior: float
    library: str = ""  # the loader family it speaks to ("pickle", "yaml", "marshal"); empty: any sink


FAMILIES: dict[str, tuple[Family, ...]] = {
    "command-injection": (
        Family("semicolon", "shell metacharacter ';' then a command that writes a canary file", 1.0),
        Family("subshell", "$(…) command substitution that writes a canary file", 0.9),
        Family("quote-break", "closes a quoted argument, then ';' and a canary command", 0.8),
        Family("backtick", "`…` command substitution that writes a canary file", 0.7),
    ),
    "code-injection": (
        Family("expression", "__import__('pathlib').Path(canary).write_text(nonce)", 1.0),
        Family("getattr-system", "getattr(__import__('os'), 'system')('echo nonce > canary')", 0.8),
        Family("statement", "import pathlib; pathlib.Path(canary).write_text(nonce)", 0.6),
    ),
    "deserialization": (
        Family("pickle-bytes", "a pickle whose __reduce__ runs exec() to write a canary file", 1.0, "pickle"),
        Family("pickle-base64", "the same crafted pickle, base64-encoded", 0.8, "pickle"),
        Family("pickle-stream", "the same crafted pickle as a binary file object", 0.7, "pickle"),
        Family("yaml-tag", "!!python/object/apply:exec tag that writes a canary file", 0.6, "yaml"),
        Family("marshal-code", "a marshalled code object that writes a canary file when executed", 0.4, "marshal"),
    ),
    "sql-injection": (
        Family("quote", "a single quote that breaks out of a SQL string literal", 1.0),
        Family("double-quote", "a double quote that breaks out of a quoted identifier or literal", 0.7),
        Family("tautology", "closes the literal, then OR 'x'='x': valid SQL that widens the query", 0.9),
        Family("unbalanced", "quotes and a parenthesis that break any SQL context", 0.6),
        Family("numeric", "0 OR 0=0 for a value spliced without quotes", 0.5),
    ),
    "path-traversal": (
        Family("dotdot", "../ segments up to the root, then the path of a secret file", 1.0),
        Family("absolute", "the absolute path of a secret file (os.path.join drops the base)", 0.8),
    ),
    "resource-exhaustion": (
        Family("deep-list", "a list nested 100 000 levels deep", 1.0),
        Family("deep-dict", "a dict nested 100 000 levels deep", 0.8),
        Family("long-string", "a string of a million characters", 0.5),
    ),
    "unlocked-shared-state": (
        Family("opcode-yield", "threads (for a file: processes) released together; a trace hook yields at every "
               "opcode of the changed module", 1.0),
        Family("line-yield", "threads (for a file: processes) released together; a trace hook yields at every line "
               "of the changed module", 0.7),
    ),
}


# JavaScript's and TypeScript's sinks (rules ``js-…`` of checks.languages.javascript_syntax): the probe is a node
# program (checks/red/probe_program/attack.cjs); shell and SQL payloads are the same text, code is JavaScript
JS_FAMILIES: dict[str, tuple[Family, ...]] = {
    "command-injection": FAMILIES["command-injection"],
    "code-injection": (
        Family("expression", "process.mainModule.require('fs').writeFileSync(canary, nonce)", 1.0),
        Family("constructor", "the same through this.constructor.constructor('return process')(): out of a vm "
               "context", 0.9),
        Family("string-break", "'); then the writer, then // : out of a quoted string in the code", 0.7),
        Family("statement-break", "1; then the writer, then // : after an expression in the code", 0.6),
    ),
    "deserialization": (
        Family("function-iife", "node-serialize's _$$ND_FUNC$$_ function, called as it is read, writes a canary file",
               1.0),
        Family("expression", "a function expression called as it is evaluated, writing a canary file", 0.6),
    ),
    "sql-injection": FAMILIES["sql-injection"],
    "path-traversal": (
        Family("dotdot", "../ segments up to the root, then the path of a secret file (in every field of a request)",
               1.0),
        Family("absolute", "the absolute path of a secret file (path.join keeps it under the base, path.resolve "
               "does not)", 0.8),
    ),
}


def javascript_sink(sink: str) -> bool:
    """Whether ``sink`` is one of the JavaScript/TypeScript syntax rules (probed by a node program)."""
    return sink.startswith("js-")


# The loader a sink belongs to: the module of a dotted call name, or bandit's test id for its blacklist/plugin.
SINK_LIBRARIES: dict[str, str] = {
    "pickle": "pickle", "_pickle": "pickle", "cPickle": "pickle", "dill": "pickle", "yaml": "yaml",
    "marshal": "marshal", "B301": "pickle", "B302": "marshal", "B506": "yaml",
}


def sink_library(sink: str) -> str:
    """The loader family of ``sink`` (``yaml.load`` → ``yaml``, bandit ``B301`` → ``pickle``); empty if unknown."""
    return SINK_LIBRARIES.get(sink.split(".", 1)[0], "")


def families(kind: str, sink: str = "") -> tuple[Family, ...]:
    """The payload families for ``kind``; with a known ``sink``, only those its loader parses (a pickle never
    reaches ``yaml.load`` as code), so a short budget is not spent on payloads that cannot fire."""
    if javascript_sink(sink):
        return JS_FAMILIES.get(kind, ())
    every = FAMILIES.get(kind, ())
    library = sink_library(sink)
    fitting = tuple(f for f in every if f.library == library) if library else ()
    return fitting or every


def describe(kind: str, family: str, sink: str = "") -> str:
    return next((f.description for f in families(kind, sink) if f.name == family), family)
