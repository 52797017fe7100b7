"""The probe program the Red Agent sends into the sandbox, as source text.

A probe runs in the head's test environment (the same image, interpreter, variables, paths and working directory
as the project's own test run) and looks like ordinary code: its scratch files have ``tempfile``-style names, it
imports the changed module under its real name, and nothing it leaves in the environment, the paths or the
payloads says "LogoMesh" or "probe". It carries the source of :mod:`checks.red.sightings`, so every shell
command, string-built code or pickle class it provokes — at import or in the call — is seen however it was reached.

Two programs share the helpers below:

- the *attack* probe imports the changed module, calls one target twice — once with a benign value, once with
  the payload — and prints one marker line per phase (``LOGOMESH-PROBE-<nonce> {json}``) to the output LogoMesh
  reads (the module cannot see it);
- the *import* probe imports each changed module once and reports what ran while it was imported.

Neither judges anything beyond observing the canary/secret files, the SQL the target sent to SQLite and the
sightings; :mod:`checks.red.probes` reads the markers and applies the oracle. They only ever run in the sandbox.
"""

from __future__ import annotations

from importlib import resources

SIGHTINGS_SOURCE = resources.files("checks.red").joinpath("sightings.py").read_text(encoding="utf-8")

COMMON = r'''
import asyncio, base64, importlib, importlib.util, inspect, io, json, marshal, os, pickle, sqlite3, tempfile

CONFIG = json.loads(__CONFIG__)
NONCE = CONFIG["nonce"]
MARK = "LOGOMESH-PROBE-" + NONCE
_out = sys.stdout
REPO = os.getcwd()
WATCH = Sightings(REPO)


def emit(phase, **data):
    data["phase"] = phase
    _out.write("\n" + MARK + " " + json.dumps(data, default=repr) + "\n")
    _out.flush()


def module_name(path):
    name = path[:-3].replace("/", ".") if path.endswith(".py") else path
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def import_module(path):
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    name = module_name(path)
    try:
        return importlib.import_module(name)
    except ImportError:
        spec = importlib.util.spec_from_file_location(name.rpartition(".")[2], os.path.join(REPO, path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


def failure(exc):
    return {"ok": False, "error_type": type(exc).__name__, "error_module": type(exc).__module__,
            "error": str(exc)[:500]}
'''

ATTACK = r'''
# The scratch directory's name is part of every crafted payload (the canary path), so it is fixed by the nonce:
# a random name would make the same review build different payload bytes and get different outcomes.
WORK = os.path.join(tempfile.gettempdir(), "tmp" + NONCE[:8])
if os.path.lexists(WORK):
    import shutil
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
SQL = []


def _note(sql):
    if isinstance(sql, str) and len(SQL) < 50:
        SQL.append(sql[:4000])


class _Cursor(sqlite3.Cursor):
    def execute(self, sql, *args, **kwargs):
        _note(sql)
        return super().execute(sql, *args, **kwargs)

    def executemany(self, sql, *args, **kwargs):
        _note(sql)
        return super().executemany(sql, *args, **kwargs)

    def executescript(self, sql):
        _note(sql)
        return super().executescript(sql)


class _Connection(sqlite3.Connection):
    def cursor(self, factory=_Cursor):
        return super().cursor(factory)

    def execute(self, sql, *args, **kwargs):
        return self.cursor().execute(sql, *args, **kwargs)

    def executemany(self, sql, *args, **kwargs):
        return self.cursor().executemany(sql, *args, **kwargs)

    def executescript(self, sql):
        return self.cursor().executescript(sql)


_connect = sqlite3.connect


def _connect_noting(*args, **kwargs):
    kwargs.setdefault("factory", _Connection)
    return _connect(*args, **kwargs)


sqlite3.connect = _connect_noting  # every SQLite connection the target opens shows the SQL it sends


class _Exploit:
    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path(%r).write_text(%r)" % (CANARY, NONCE),))


def _nested(kind, depth=100000):
    value = [] if kind == "list" else {}
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


def sql_payload(family):
    marker = "q" + NONCE[:8]
    return {"quote": marker + "'", "double-quote": marker + '"', "unbalanced": marker + "') \" '",
            "tautology": marker + "' OR '" + marker + "'='" + marker,
            "numeric": "0 OR 0=0 /*" + marker + "*/"}[family]


def payload(kind, family):
    shell = "echo " + NONCE + " > " + CANARY
    traversal = "../" * 24 + SECRET.lstrip("/")
    writer = "import pathlib; pathlib.Path(%r).write_text(%r)" % (CANARY, NONCE)
    table = {
        ("command-injection", "semicolon"): "a; " + shell + " #",
        ("command-injection", "subshell"): "$(" + shell + ")",
        ("command-injection", "quote-break"): "a'; " + shell + "; echo '",
        ("command-injection", "backtick"): "`" + shell + "`",
        ("code-injection", "expression"): "__import__('pathlib').Path(%r).write_text(%r)" % (CANARY, NONCE),
        ("code-injection", "getattr-system"): "getattr(__import__('os'), 'system')(%r)" % shell,
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
        return "!!python/object/apply:exec [%r]" % writer
    if family == "deep-list":
        return _nested("list")
    if family == "deep-dict":
        return _nested("dict")
    raise ValueError(family)


def benign(kind, family):
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


def database():
    """A SQLite database with a small table, for arguments that name a database file."""
    connection = sqlite3.connect(DATABASE)
    connection.execute("CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, name TEXT)")
    connection.commit()
    connection.close()
    return DATABASE


def filler(name, connection):
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


def load_target():
    module = import_module(CONFIG["path"])
    parts = CONFIG["qualname"].split(".")
    if CONFIG["is_method"]:
        owner = getattr(module, parts[0])
        instance = owner.__new__(owner)
        return getattr(instance, parts[1])
    target = module
    for part in parts:
        target = getattr(target, part)
    return target


def call(target, value):
    connection = sqlite3.connect(":memory:")
    kwargs = {}
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
            result = asyncio.run(result)
        if inspect.isgenerator(result):
            result = list(result)
        return {"ok": True, "returned": repr(result).replace(WORK, "<work>")[:4000]}
    except BaseException as exc:  # the target is hostile code: catch SystemExit and the rest
        return failure(exc)


def main():
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
'''

IMPORTS = r'''
def main():
    for path in CONFIG["paths"]:
        try:
            import_module(path)
            emit("import", path=path, ok=True, sightings=WATCH.take())
        except BaseException as exc:  # the module is hostile code: catch SystemExit and the rest
            emit("import", path=path, sightings=WATCH.take(), **failure(exc))


main()
'''

PROBE_TEMPLATE = SIGHTINGS_SOURCE + COMMON + ATTACK
IMPORT_TEMPLATE = SIGHTINGS_SOURCE + COMMON + IMPORTS
