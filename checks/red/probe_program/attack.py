# ruff: noqa: I001 - the lines above the program line are not part of the program's import block
"""The attack probe: imports the changed module, calls one target twice — once with a benign value, once with the
payload — and prints one marker line per phase to the output LogoMesh reads (the module cannot see it)."""

# Above the program line: for linters and type checkers only (the joined program defines these names itself).
from checks.red.probe_program.common import CONFIG, NONCE, WATCH, emit, failure, import_module

# --- program ---
import asyncio
import base64
import inspect
import io
import marshal
import os
import pickle
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from typing import Any

# The scratch directory's name is part of every crafted payload (the canary path), so it is fixed by the nonce:
# a random name would make the same review build different payload bytes and get different outcomes.
WORK = os.path.join(tempfile.gettempdir(), "tmp" + NONCE[:8])
if os.path.lexists(WORK):
    shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK, mode=0o700)
CANARY = os.path.join(WORK, NONCE[8:16])
SECRET = os.path.join(WORK, NONCE[12:20] + ".txt")
CONTENT = NONCE[::-1]
BASE = os.path.join(WORK, "data")
os.makedirs(BASE)
with open(os.path.join(BASE, "a"), "w") as handle:
    handle.write("benign")
with open(SECRET, "w") as handle:
    handle.write(CONTENT)
DATABASE = os.path.join(WORK, "app.db")
sys.setrecursionlimit(10000)
SQL: list[str] = []


def _note(sql: object) -> None:
    if isinstance(sql, str) and len(SQL) < 50:
        SQL.append(sql[:4000])


class _Cursor(sqlite3.Cursor):
    def execute(self, sql: str, *args: Any, **kwargs: Any) -> sqlite3.Cursor:  # type: ignore[override]
        _note(sql)
        return super().execute(sql, *args, **kwargs)

    def executemany(self, sql: str, *args: Any, **kwargs: Any) -> sqlite3.Cursor:  # type: ignore[override]
        _note(sql)
        return super().executemany(sql, *args, **kwargs)

    def executescript(self, sql: str) -> sqlite3.Cursor:
        _note(sql)
        return super().executescript(sql)


class _Connection(sqlite3.Connection):
    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        return self.cursor().execute(sql, *args, **kwargs)  # type: ignore[no-any-return]

    def executemany(self, sql: str, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        return self.cursor().executemany(sql, *args, **kwargs)  # type: ignore[no-any-return]

    def executescript(self, sql: str) -> sqlite3.Cursor:
        return self.cursor().executescript(sql)  # type: ignore[no-any-return]


_connect = sqlite3.connect


def _connect_noting(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    kwargs.setdefault("factory", _Connection)
    connection: sqlite3.Connection = _connect(*args, **kwargs)
    return connection


# every SQLite connection the target opens shows the SQL it sends
sqlite3.connect = _connect_noting  # type: ignore[assignment]


class _Exploit:
    def __reduce__(self) -> tuple[Callable[..., Any], tuple[str]]:
        return (exec, (f"import pathlib; pathlib.Path({CANARY!r}).write_text({NONCE!r})",))


def _nested(kind: str, depth: int = 100000) -> object:
    value: object = [] if kind == "list" else {}
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


def sql_payload(family: str) -> str:
    marker = "q" + NONCE[:8]
    return {"quote": marker + "'", "double-quote": marker + '"', "unbalanced": marker + "') \" '",
            "tautology": marker + "' OR '" + marker + "'='" + marker,
            "numeric": "0 OR 0=0 /*" + marker + "*/"}[family]


def payload(kind: str, family: str) -> object:
    shell = "echo " + NONCE + " > " + CANARY
    traversal = "../" * 24 + SECRET.lstrip("/")
    writer = f"import pathlib; pathlib.Path({CANARY!r}).write_text({NONCE!r})"
    table = {
        ("command-injection", "semicolon"): "a; " + shell + " #",
        ("command-injection", "subshell"): "$(" + shell + ")",
        ("command-injection", "quote-break"): "a'; " + shell + "; echo '",
        ("command-injection", "backtick"): "`" + shell + "`",
        ("code-injection", "expression"): f"__import__('pathlib').Path({CANARY!r}).write_text({NONCE!r})",
        ("code-injection", "getattr-system"): f"getattr(__import__('os'), 'system')({shell!r})",
        ("code-injection", "statement"): writer,
        ("path-traversal", "dotdot"): traversal,
        ("path-traversal", "absolute"): SECRET,
        ("resource-exhaustion", "long-string"): "a" * 1000000,
    }
    if (kind, family) in table:
        return table[(kind, family)]
    if kind == "sql-injection":
        return sql_payload(family)
    crafted = pickle.dumps(_Exploit())
    if family == "pickle-bytes":
        return crafted
    if family == "pickle-base64":
        return base64.b64encode(crafted).decode()
    if family == "pickle-stream":
        return io.BytesIO(crafted)
    if family == "marshal-code":
        return marshal.dumps(compile(writer, "<input>", "exec"))
    if family == "yaml-tag":
        return f"!!python/object/apply:exec [{writer!r}]"
    if family == "deep-list":
        return _nested("list")
    if family == "deep-dict":
        return _nested("dict")
    raise ValueError(family)


def benign(kind: str, family: str) -> object:
    if kind == "deserialization":
        plain = pickle.dumps("a")
        return {"pickle-bytes": plain, "pickle-base64": base64.b64encode(plain).decode(),
                "pickle-stream": io.BytesIO(plain), "yaml-tag": "a",
                "marshal-code": marshal.dumps(compile("pass", "<input>", "exec"))}[family]
    if kind == "resource-exhaustion":
        return {"deep-list": [[]], "deep-dict": {"k": {}}, "long-string": "a"}[family]
    if kind == "sql-injection" and family == "numeric":
        return "1"
    return "a"


def database() -> str:
    """A SQLite database with a small table, for arguments that name a database file."""
    connection = sqlite3.connect(DATABASE)
    connection.execute("CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, name TEXT)")
    connection.commit()
    connection.close()
    return DATABASE


def filler(name: str, connection: sqlite3.Connection) -> object:
    lowered = name.lower()
    if lowered in ("conn", "connection", "con", "db", "database", "db_conn", "dbconn", "session"):
        return connection
    if lowered in ("cursor", "cur"):
        return connection.cursor()
    if lowered.endswith(("db_path", "database_path", "db_file", "dbfile", "db_name", "dbname", "database_url",
                         "dsn")):
        return database()
    if any(word in lowered for word in ("dir", "root", "base", "folder")):
        return BASE
    if any(word in lowered for word in ("path", "file")):
        return os.path.join(BASE, "a")
    return "a"


def load_target() -> Any:
    module = import_module(CONFIG["path"])
    parts = CONFIG["qualname"].split(".")
    if CONFIG["is_method"]:
        owner = getattr(module, parts[0])
        instance = owner.__new__(owner)
        return getattr(instance, parts[1])
    target: Any = module
    for part in parts:
        target = getattr(target, part)
    return target


def call(target: Any, value: object) -> dict[str, Any]:
    connection = sqlite3.connect(":memory:")
    kwargs: dict[str, object] = {}
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        signature = None
    for name in CONFIG["params"]:
        if name == CONFIG["argument"]:
            kwargs[name] = value
            continue
        parameter = signature.parameters.get(name) if signature else None
        if parameter is not None and parameter.default is not inspect.Parameter.empty:
            continue
        kwargs[name] = filler(name, connection)
    try:
        result = target(**kwargs)
        if inspect.isawaitable(result):
            result = asyncio.run(result)  # type: ignore[arg-type]
        if inspect.isgenerator(result):
            result = list(result)
        return {"ok": True, "returned": repr(result).replace(WORK, "<work>")[:4000]}
    except BaseException as exc:  # the target is hostile code: catch SystemExit and the rest
        return failure(exc)


def main() -> None:
    kind, family = CONFIG["kind"], CONFIG["family"]
    try:
        target = load_target()
    except BaseException as exc:
        emit("import", sightings=WATCH.take(), **failure(exc))
        return
    emit("import", ok=True, sightings=WATCH.take())
    del SQL[:]
    emit("baseline", **call(target, benign(kind, family)), sql=SQL[:])
    value = payload(kind, family)
    del SQL[:]
    emit("payload", ok=True, sql_payload=sql_payload(family) if kind == "sql-injection" else None)
    outcome = call(target, value)
    del value
    returned = outcome.get("returned", "")
    with open(SECRET) as handle:
        secret_intact = handle.read() == CONTENT
    canary = os.path.exists(CANARY)
    emit("attack", canary=canary, returned_secret=CONTENT in returned, secret_intact=secret_intact,
         sightings=WATCH.take(), sql=SQL[:], **outcome)


main()
