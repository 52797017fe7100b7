"""Fixture changes for the Red Agent: six vulnerable modules and clean modules of the same shape."""

from __future__ import annotations

import hashlib
from pathlib import Path

from checks.models import Case, ChangedFile

VULNERABLE: dict[str, tuple[str, str]] = {
    # name: (path, source)
    "command": ("shop/shell.py", '''"""List files."""
import subprocess


def list_dir(pattern):
    listing = subprocess.run(f"ls {pattern}", shell=True, capture_output=True, text=True)
    return listing.stdout
'''),
    "eval": ("shop/discounts.py", '''"""Discount rules."""


def apply_discount(price, rule):
    factor = rule.strip()
    return price * eval(factor)
'''),
    "pickle": ("shop/session.py", '''"""Sessions in cookies."""
import base64
import pickle


def load_session(cookie):
    return pickle.loads(base64.b64decode(cookie))
'''),
    "sql": ("shop/users.py", '''"""User lookup."""


def find_user(conn, name):
    query = "SELECT id, name FROM users WHERE name = '%s'" % name
    return conn.execute(query).fetchall()
'''),
    "path": ("shop/uploads.py", '''"""Uploaded files."""
import os

UPLOADS = "uploads"


def read_upload(name):
    with open(os.path.join(UPLOADS, name), encoding="utf-8") as handle:
        return handle.read()
'''),
    "token": ("shop/github.py", '''"""GitHub client settings."""

GITHUB_TOKEN = "ghp_R4nd0mL00k1ngT0k3nV4lu3xyzABCDEF123456"


def auth_header():
    return {"Authorization": f"token {GITHUB_TOKEN}"}
'''),
}

EXPECTED = {
    # name: (kind, severity, confirmed, cwe)
    "command": ("command-injection", "critical", True, "CWE-78"),
    "eval": ("code-injection", "critical", True, "CWE-95"),
    "pickle": ("deserialization", "critical", True, "CWE-502"),
    "sql": ("sql-injection", "high", True, "CWE-89"),
    "path": ("path-traversal", "high", True, "CWE-22"),
    "token": ("hardcoded-secret", "high", False, "CWE-798"),
}

CLEAN: dict[str, tuple[str, str]] = {
    "command": ("shop/shell.py", '''"""List files."""
import subprocess


def list_dir(pattern):
    listing = subprocess.run(["ls", "--", pattern], capture_output=True, text=True, check=False)
    return listing.stdout
'''),
    "eval": ("shop/discounts.py", '''"""Discount rules."""


def apply_discount(price, rule):
    factor = float(rule.strip())
    return price * factor
'''),
    "pickle": ("shop/session.py", '''"""Sessions in cookies."""
import base64
import json


def load_session(cookie):
    return json.loads(base64.b64decode(cookie))
'''),
    "sql": ("shop/users.py", '''"""User lookup."""


def find_user(conn, name):
    query = "SELECT id, name FROM users WHERE name = ?"
    return conn.execute(query, (name,)).fetchall()
'''),
    "path": ("shop/uploads.py", '''"""Uploaded files."""
import os

UPLOADS = "uploads"


def read_upload(name):
    root = os.path.realpath(UPLOADS)
    target = os.path.realpath(os.path.join(root, name))
    if os.path.commonpath([root, target]) != root:
        raise PermissionError(name)
    with open(target, encoding="utf-8") as handle:
        return handle.read()
'''),
    "token": ("shop/github.py", '''"""GitHub client settings."""
import os

GITHUB_TOKEN = os.environ.get("GITHUB_TOKEN", "")


def auth_header():
    return {"Authorization": f"token {GITHUB_TOKEN}"}
'''),
}

INIT = ("shop/__init__.py", '"""The shop."""\n')


def write_repo(root: Path, modules: dict[str, str]) -> Path:
    for path, text in {INIT[0]: INIT[1], **modules}.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def make_case(modules: dict[str, str], body: str = "") -> Case:
    """A change that adds ``modules`` (path → source) to a repository that already has the package."""
    files = tuple(
        ChangedFile(path=path, status="added", added_lines=tuple(range(1, text.count("\n") + 2)), content=text)
        for path, text in sorted(modules.items())
    )
    diff = "".join(f"+++ b/{path}\n{text}" for path, text in sorted(modules.items()))
    head = hashlib.sha1(diff.encode()).hexdigest()
    return Case(base_sha="0" * 40, head_sha=head, title="Add shop helpers", body=body, diff=diff, files=files,
                head_paths=tuple(sorted({INIT[0], *modules})))
