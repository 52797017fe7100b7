"""Resolve what a call really calls: names through imports and assignments, and values built from constants.

``resolved_name(node, aliases)`` extends a plain ``a.b.c`` name with what static analysis can fold:

- strings built from constants: ``"ev" + "al"``, f-strings of constants, ``"".join([...])``, ``"lave"[::-1]``,
  ``codecs.decode("riny", "rot13")``, ``base64.b64decode("ZXZhbA==").decode()``, ``bytes.fromhex(...)``;
- dynamic lookups on those strings: ``getattr(os, "sys" + "tem")``, ``builtins.__dict__["eval"]``,
  ``vars(builtins)["eval"]``, ``globals()["eval"]``, ``__import__("os").system``,
  ``importlib.import_module("os").system``, ``operator.methodcaller("system", cmd)(os)``;
- ``builtins.eval`` is ``eval``.

``aliases`` maps local names to what they stand for (imports, and assignments such as ``e = eval`` or
``run = getattr(os, "system")``, collected by :func:`assignment_aliases`). Pure: no I/O, nothing executed.
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs

MAX_DEPTH = 20
BUILTIN_MODULES = ("builtins", "__builtins__", "__builtin__")


def fold_string(node: ast.AST, aliases: dict[str, str], depth: int = 0) -> str | None:
    """The string an expression always evaluates to, when constants alone decide it."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
        return node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = fold_string(node.left, aliases, depth + 1), fold_string(node.right, aliases, depth + 1)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            inner = value.value if isinstance(value, ast.FormattedValue) else value
            folded = fold_string(inner, aliases, depth + 1)
            if folded is None:
                return None
            parts.append(folded)
        return "".join(parts)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        text = fold_string(node.value, aliases, depth + 1)
        bounds = [_int(b) for b in (node.slice.lower, node.slice.upper, node.slice.step)]
        if text is None or any(b is False for b in bounds):
            return None
        return text[slice(*bounds)]
    if isinstance(node, ast.Call):
        return _fold_call(node, aliases, depth)
    return None


def _int(node: ast.expr | None) -> int | bool | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return int(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, int):
        return -int(node.operand.value)
    return False


def _fold_call(node: ast.Call, aliases: dict[str, str], depth: int) -> str | None:
    func = node.func
    args = [fold_string(a, aliases, depth + 1) for a in node.args]
    # "".join([...]) and "x".join(...)
    if isinstance(func, ast.Attribute) and func.attr == "join" and len(node.args) == 1:
        glue = fold_string(func.value, aliases, depth + 1)
        items = node.args[0]
        if glue is not None and isinstance(items, ast.List | ast.Tuple):
            parts = [fold_string(e, aliases, depth + 1) for e in items.elts]
            return glue.join(p for p in parts if p is not None) if all(p is not None for p in parts) else None
        return None
    # b64decode(...).decode(), "...".encode(), .lower()/.upper()/.strip()
    if isinstance(func, ast.Attribute) and func.attr in ("decode", "encode", "lower", "upper", "strip"):
        inner = fold_string(func.value, aliases, depth + 1)
        if inner is not None:  # a method of a folded string (not codecs.decode, handled below)
            return inner if func.attr in ("decode", "encode", "strip") else str(getattr(inner, func.attr)())
    name = resolved_name(func, aliases, depth + 1)
    if name in ("codecs.decode", "codecs.encode") and args and args[0] is not None:
        encoding = args[1] if len(args) > 1 else None
        if encoding and encoding.replace("_", "").lower() in ("rot13", "rot_13"):
            return codecs.decode(args[0], "rot13")
        return None
    if name in ("base64.b64decode", "base64.decodebytes", "base64.b32decode", "base64.b16decode") and args \
            and args[0] is not None:
        try:
            decoder = {"base64.b32decode": base64.b32decode, "base64.b16decode": base64.b16decode}.get(
                name, base64.b64decode)
            return decoder(args[0]).decode("latin-1")
        except (binascii.Error, ValueError):
            return None
    if name == "bytes.fromhex" and args and args[0] is not None:
        try:
            return bytes.fromhex(args[0]).decode("latin-1")
        except ValueError:
            return None
    if name in ("str", "chr") and args and all(a is not None for a in args):
        return "".join(a for a in args if a is not None)
    return None


def resolved_name(node: ast.AST, aliases: dict[str, str], depth: int = 0) -> str | None:
    """``a.b.c`` for what the expression names, folding dynamic lookups on constant strings; else None."""
    if depth > MAX_DEPTH:
        return None
    name = _resolve(node, aliases, depth)
    if name is None:
        return None
    for prefix in BUILTIN_MODULES:
        if name.startswith(prefix + "."):
            return name[len(prefix) + 1:]
    return name


def _resolve(node: ast.AST, aliases: dict[str, str], depth: int) -> str | None:
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = resolved_name(node.value, aliases, depth + 1)
        if base is None:
            return None
        return f"{base}.{node.attr}"
    if isinstance(node, ast.Subscript):  # builtins.__dict__["eval"], vars(os)["system"], globals()["eval"]
        key = fold_string(node.slice, aliases, depth + 1)
        if key is None:
            return None
        holder = node.value
        if isinstance(holder, ast.Attribute) and holder.attr == "__dict__":
            base = resolved_name(holder.value, aliases, depth + 1)
            return f"{base}.{key}" if base else None
        if isinstance(holder, ast.Call) and not holder.keywords:
            called = resolved_name(holder.func, aliases, depth + 1)
            if called == "vars" and len(holder.args) == 1:
                base = resolved_name(holder.args[0], aliases, depth + 1)
                return f"{base}.{key}" if base else None
            if called in ("globals", "locals") and not holder.args:
                return aliases.get(key, key)
        return None
    if isinstance(node, ast.Call):
        called = resolved_name(node.func, aliases, depth + 1)
        if called == "getattr" and len(node.args) >= 2:
            base = resolved_name(node.args[0], aliases, depth + 1)
            attr = fold_string(node.args[1], aliases, depth + 1)
            return f"{base}.{attr}" if base and attr else None
        if called in ("__import__", "importlib.import_module") and node.args:
            return fold_string(node.args[0], aliases, depth + 1)
        return None
    return None


def call_name(call: ast.Call, aliases: dict[str, str]) -> str | None:
    """What a call calls, including ``operator.methodcaller("system", cmd)(os)`` → ``os.system``."""
    if isinstance(call.func, ast.Call) and call.args:
        maker = resolved_name(call.func.func, aliases)
        if maker == "operator.methodcaller" and call.func.args:
            method = fold_string(call.func.args[0], aliases)
            base = resolved_name(call.args[0], aliases)
            if base and method:
                return f"{base}.{method}"
    return resolved_name(call.func, aliases)


def assignment_aliases(tree: ast.AST, aliases: dict[str, str]) -> dict[str, str]:
    """Names bound to something resolvable (``e = eval``, ``run = getattr(os, "system")``), flow-insensitive."""
    found = dict(aliases)
    for _ in range(3):  # a chain of assignments settles in a few passes
        changed = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target = node.targets[0].id
                value = resolved_name(node.value, found)
                if value and value != target and found.get(target) != value:
                    found[target] = value
                    changed = True
        if not changed:
            break
    return found
