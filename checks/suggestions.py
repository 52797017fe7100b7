"""Committable suggestions: the exact rewrite of one line, only where it is certain and small.

A pull-request review comment may carry a ```` ```suggestion ```` block that GitHub lets the author commit with one
click. A wrong one is worse than none, so each function here returns the replacement line, or ``None`` whenever
the line is not exactly a form it knows (several statements, a call split over lines, a name it cannot be sure
of, a string it cannot re-quote). Each one keeps the line's indentation and everything outside the call it
rewrites.

===========================  ===============================================  ====================================
function                     rewrites                                         into
===========================  ===============================================  ====================================
:func:`sql_parameters`       ``cur.execute(f"… WHERE name = '{name}'")``      ``cur.execute("… WHERE name = ?",
                             (``+`` concatenation and ``%`` alike)            (name,))`` (the driver's placeholder)
:func:`yaml_safe_load`       ``yaml.load(text)`` / ``Loader=yaml.Loader``     ``yaml.safe_load(text)``
:func:`shell_argument_list`  ``subprocess.run(f"git log {ref}", shell=True)``  ``subprocess.run(["git", "log",
                                                                              ref])``
:func:`remove_added_skip`    ``@pytest.mark.skip(…)``, ``pytest.skip(…)``,    the line removed (an empty
                             ``it.only(`` (JavaScript)                        suggestion), or ``it(``
===========================  ===============================================  ====================================

Pure: text in, text out.
"""

from __future__ import annotations

import ast
import re

from checks import pyast
from checks.red.shared_state import dotted

SQL_EXECUTE = frozenset({"execute"})
SHELL_CALLS = frozenset({"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
                         "subprocess.Popen"})
UNSAFE_YAML_LOADERS = frozenset({"yaml.Loader", "yaml.FullLoader", "yaml.UnsafeLoader"})
# A shell gives these a meaning of their own: a command holding any of them is not a plain list of words.
SHELL_META = re.compile(r"[|&;<>()$`\\\"'*?\[\]#~{}!\n\t%]")
# Where an unquoted value may stand in SQL (a comparison, LIMIT/OFFSET); a name there (a table, a column) may not
# become a parameter, so anywhere else the rewrite is not certain.
SQL_VALUE_BEFORE = re.compile(r"(?:[=<>]|\bLIMIT|\bOFFSET)\s*$", re.IGNORECASE)
# Drivers whose placeholder is known from the module the file imports (qmark for sqlite3, format for the others).
PLACEHOLDERS = {"sqlite3": "?", "aiosqlite": "?", "psycopg": "%s", "psycopg2": "%s", "pymysql": "%s",
                "MySQLdb": "%s", "mysql": "%s"}
JS_ONLY = re.compile(r"\b(?:it|test|describe|context)\.only\(")
PY_SKIP_DECORATOR = re.compile(r"^\s*@(?:pytest\.mark\.(?:skip|xfail)|unittest\.(?:skip|expectedFailure))"
                               r"(?:\((?P<args>.*)\))?\s*(?:#.*)?$")
PY_SKIP_CALL = re.compile(r"^\s*pytest\.(?:skip|xfail)\((?P<args>.*)\)\s*(?:#.*)?$")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _parse_line(line: str) -> tuple[str, ast.Module] | None:
    """The line without its indentation and its syntax tree, when it is one complete simple statement."""
    code = line.strip()
    if not code or code.endswith((":", "\\")):
        return None
    try:
        tree = pyast.parse(code)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return None
    return code, tree


def _replace(line: str, code: str, node: ast.expr, text: str) -> str:
    """``line`` with the source of ``node`` (a node of ``code``, the line stripped) replaced by ``text``."""
    raw = code.encode()  # col offsets count UTF-8 bytes
    start = len(raw[: node.col_offset].decode())
    end = len(raw[: node.end_col_offset].decode())
    return _indent(line) + code[:start] + text + code[end:]


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def _plain_value(node: ast.expr) -> bool:
    """A name, an attribute chain or a subscript of them by a constant: re-used as a parameter verbatim."""
    if isinstance(node, ast.Subscript):
        return _plain_value(node.value) and isinstance(node.slice, ast.Constant)
    return dotted(node) is not None


def _simple_literal(code: str, node: ast.expr) -> str | None:
    """The quote of a one-line, escape-free ``"…"``/``'…'``/``f"…"`` literal, else None."""
    source = ast.get_source_segment(code, node)
    if source is None:
        return None
    body = source[1:] if source[:1] in ("f", "F") else source
    if len(body) < 2 or body[0] not in "'\"" or body[-1] != body[0] or body.startswith(body[0] * 3) \
            or "\\" in body:
        return None
    return body[0]


def placeholder_for(source: str) -> str | None:
    """The driver's parameter placeholder, from the one database module ``source`` imports (None: none or several,
    so the style is unknown)."""
    found: set[str] = set()
    for match in re.finditer(r"^\s*(?:import|from)\s+([A-Za-z_][\w]*)", source, re.MULTILINE):
        if match.group(1) in PLACEHOLDERS:
            found.add(PLACEHOLDERS[match.group(1)])
    return found.pop() if len(found) == 1 else None


def _fstring_parts(node: ast.JoinedStr) -> list[str | ast.expr] | None:
    """An f-string's text and values in order; None when a value is converted (``!r``) or formatted (``:>3``)."""
    out: list[str | ast.expr] = []
    for part in node.values:
        text = isinstance(part, ast.Constant) and isinstance(part.value, str)
        plain = isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None
        if not (text or plain):
            return None
        out.append(part.value)  # type: ignore[attr-defined]
    return out


def _sql_pieces(node: ast.expr) -> list[str | ast.expr] | None:
    """The query as text and interpolated values in order, for an f-string or a ``+`` chain of literals and names."""
    if isinstance(node, ast.JoinedStr):
        return _fstring_parts(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _sql_pieces(node.left), _sql_pieces(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if _plain_value(node):
        return [node]
    return None


def _percent_pieces(node: ast.BinOp) -> list[str | ast.expr] | None:
    """``"… %s …" % value`` or ``% (a, b)``: only ``%s`` conversions, one value per conversion."""
    if not (isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
        return None
    values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
    texts = node.left.value.split("%s")
    if "%" in "".join(texts) or len(texts) - 1 != len(values):
        return None
    out: list[str | ast.expr] = [texts[0]]
    for value, text in zip(values, texts[1:], strict=True):
        out += [value, text]
    return out


def _literals(node: ast.expr) -> list[ast.expr]:
    """The string literals the query is written with (f-strings whole, the parts of a ``+`` chain)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literals(node.left) + _literals(node.right)
    if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return [node]
    return []


def sql_parameters(line: str, placeholder: str | None) -> str | None:
    """``line`` with the SQL its ``execute`` call builds from values turned into a query with placeholders and a
    tuple of parameters; None unless every value is a quoted string literal's whole content or stands where SQL
    takes a value, and the driver's placeholder is known."""
    if placeholder not in ("?", "%s"):
        return None
    parsed = _parse_line(line)
    if parsed is None:
        return None
    code, tree = parsed
    calls = [c for c in _calls(tree) if isinstance(c.func, ast.Attribute) and c.func.attr in SQL_EXECUTE]
    if len(calls) != 1 or len(calls[0].args) != 1 or calls[0].keywords:
        return None
    call, query = calls[0], calls[0].args[0]
    if isinstance(query, ast.BinOp) and isinstance(query.op, ast.Mod):
        pieces, literals = _percent_pieces(query), [query.left]
    else:
        pieces, literals = _sql_pieces(query), _literals(query)
    if pieces is None or not any(isinstance(p, ast.expr) for p in pieces):
        return None
    quotes = {_simple_literal(code, n) for n in literals}
    if len(quotes) != 1:
        return None
    quote = quotes.pop()
    if quote is None:
        return None
    sql, params, glued = "", [], False
    for i, piece in enumerate(pieces):
        if isinstance(piece, str):
            if glued:  # the closing quote of a value made a parameter
                if not piece.startswith("'"):
                    return None
                piece, glued = piece[1:], False
            sql += piece
            continue
        following = pieces[i + 1] if i + 1 < len(pieces) else ""
        if not _plain_value(piece) or not isinstance(following, str):
            return None
        if sql.endswith("'") and following.startswith("'"):
            sql, glued = sql[:-1] + placeholder, True
        elif SQL_VALUE_BEFORE.search(sql) and not following[:1].isalnum() and following[:1] != "'":
            sql += placeholder
        else:
            return None
        params.append(ast.get_source_segment(code, piece))
    if glued or sql.count("'") % 2 or quote in sql or "\\" in sql or "\n" in sql or None in params:
        return None
    if placeholder == "%s" and "%" in sql.replace("%s", ""):
        return None
    args = f"{quote}{sql}{quote}, ({', '.join(str(p) for p in params)}{',' if len(params) == 1 else ''})"
    return _replace(line, code, call, f"{ast.get_source_segment(code, call.func)}({args})")


def yaml_safe_load(line: str) -> str | None:
    """``yaml.load(x)`` (with no loader, or an unsafe one) as ``yaml.safe_load(x)``; None for anything else."""
    parsed = _parse_line(line)
    if parsed is None:
        return None
    code, tree = parsed
    calls = [c for c in _calls(tree) if dotted(c.func) == "yaml.load"]
    if len(calls) != 1:
        return None
    call = calls[0]
    loader: ast.expr | None = None
    if len(call.args) == 2:
        loader = call.args[1]
    elif len(call.args) != 1:
        return None
    for keyword in call.keywords:
        if keyword.arg != "Loader" or loader is not None:
            return None
        loader = keyword.value
    if loader is not None and dotted(loader) not in UNSAFE_YAML_LOADERS:
        return None
    if isinstance(call.args[0], ast.Starred):
        return None
    return _replace(line, code, call, f"yaml.safe_load({ast.get_source_segment(code, call.args[0])})")


def _words(node: ast.expr, code: str) -> list[str] | None:
    """The command's words as Python source: literal words quoted, each interpolated value a word of its own."""
    parts: list[str | ast.expr] | None = None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        parts = [node.value]
    elif isinstance(node, ast.JoinedStr):
        parts = _fstring_parts(node)
    if parts is None:
        return None
    words: list[str] = []
    for i, part in enumerate(parts):
        if isinstance(part, str):
            if SHELL_META.search(part):
                return None
            before = parts[i - 1] if i else None
            after = parts[i + 1] if i + 1 < len(parts) else None
            # a value glued to literal text ("--ref={ref}") would change meaning if split: only whole words
            if (before is not None and part[:1] != " ") or (after is not None and part[-1:] != " "):
                return None
            words += [f'"{word}"' for word in part.split()]  # no quote nor backslash: SHELL_META
        else:
            source = ast.get_source_segment(code, part)
            if source is None or not _plain_value(part) or (i and not isinstance(parts[i - 1], str)):
                return None  # a call, or two values glued into one word
            words.append(source)
    if not words or "=" in (parts[0] if isinstance(parts[0], str) else "").split(" ")[0]:
        return None
    return words


def shell_argument_list(line: str) -> str | None:
    """``subprocess.run("cmd arg", shell=True)`` as ``subprocess.run(["cmd", "arg"])``: only for a literal or an
    f-string whose values are whole words and whose text holds nothing a shell would interpret."""
    parsed = _parse_line(line)
    if parsed is None:
        return None
    code, tree = parsed
    calls = [c for c in _calls(tree) if dotted(c.func) in SHELL_CALLS]
    if len(calls) != 1:
        return None
    call = calls[0]
    shell = [k for k in call.keywords if k.arg == "shell"]
    if len(call.args) != 1 or len(shell) != 1 or not (isinstance(shell[0].value, ast.Constant)
                                                      and shell[0].value.value is True):
        return None
    if any(k.arg is None or k.arg == "executable" for k in call.keywords):
        return None
    if isinstance(call.args[0], (ast.JoinedStr, ast.Constant)) and _simple_literal(code, call.args[0]) is None:
        return None
    words = _words(call.args[0], code)
    if words is None:
        return None
    rest = [ast.get_source_segment(code, k) for k in call.keywords if k.arg != "shell"]
    if any(r is None for r in rest):
        return None
    args = ", ".join([f"[{', '.join(words)}]", *(str(r) for r in rest)])
    return _replace(line, code, call, f"{ast.get_source_segment(code, call.func)}({args})")


def _balanced(text: str) -> bool:
    try:
        pyast.parse(f"f({text})")
    except SyntaxError:
        return False
    return True


def remove_added_skip(lines: list[str], number: int) -> str | None:
    """The suggestion for line ``number`` (1-based) of ``lines`` (the file at head) that adds an unconditional
    skip: ``""`` (the line removed) for a one-line skip/xfail decorator or a ``pytest.skip(…)`` followed by more of
    its block; the line without ``.only`` for a JavaScript ``it.only(``/``describe.only(``; else None. Conditional
    skips (``skipif``) are not suggested: the condition may be right."""
    if not 0 < number <= len(lines):
        return None
    line = lines[number - 1]
    if len(JS_ONLY.findall(line)) == 1:
        return JS_ONLY.sub(lambda m: m.group().replace(".only(", "("), line)
    decorator = PY_SKIP_DECORATOR.match(line)
    if decorator is not None:
        args = decorator.group("args")
        following = lines[number] if number < len(lines) else ""
        if (args is None or _balanced(args)) and following.lstrip().startswith(("@", "def ", "async def ", "class ")):
            return ""
        return None
    call = PY_SKIP_CALL.match(line)
    if call is None or not _balanced(call.group("args")):
        return None
    rest = [text for text in lines[number:] if text.strip() and not text.lstrip().startswith("#")]
    if rest and _indent(rest[0]) == _indent(line):
        return ""  # the block goes on after it: removing the line leaves valid code
    return None
