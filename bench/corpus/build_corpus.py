"""Build the calibration corpus of real merged pull requests from local mirrors, deterministically.

Run from the repository root:  ``python bench/corpus/build_corpus.py [MIRRORS]``  (default ``/work/.mirror``,
one bare clone per project at ``MIRRORS/<owner>+<name>/repo``, as the search tool's ``fetch`` leaves them).

Every project is pinned to a commit (``PROJECTS``): the first-parent history up to it is walked newest first and
the first ``PER_PROJECT`` merged PRs that change product code *and* tests are kept — squash commits whose subject
ends in ``(#123)`` (base = first parent, head = the commit) and ``Merge pull request #N`` merges (base = first
parent, head = second parent; the PR's title is the merge body's first line). Changes above ``MAX_LINES`` changed
lines, and release or version-bump commits, are skipped. Title and body are the text as merged. The licence is
read from the licence file at the pinned commit. The project's half (``fit`` or ``held-out``) is decided by a hash
of its name, never per PR. Output: ``bench/corpus/prs.json`` (sorted, stable: rerunning gives the same bytes).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).with_name("prs.json")
PER_PROJECT = 6
MAX_LINES = 800
SCAN = 600  # first-parent commits read per project

# repo -> the pinned commit the corpus is read from
PROJECTS: dict[str, str] = {
    "Textualize/rich": "42899d8a0a96b121a514516f4be9db44ff7aeaf3",
    "asottile/reorder-python-imports": "2d9adf0c18fc88f14c83994b3d0a229f628adb2a",
    "asottile/tokenize-rt": "51d76ae32ce66963b401b2b71e03baba0962301e",
    "benjaminp/six": "c8e394065cd541a16c040515dc0afb85cf22a7c3",
    "dateutil/dateutil": "c981f9c7aa91b83cc9bd33a09ecee9e751b06e8d",
    "encode/httpx": "ae1b9f66238f75ced3ced5e4485408435de10768",
    "encode/starlette": "cb8f84f5284dc301ca7a31eb732b9e140769dd48",
    "jazzband/prettytable": "190af197c7b3f1c12e9bb266093610d559229ec3",
    "jpadilla/pyjwt": "dcc27a9d3182a2349c30b160758785c6ce7a6508",
    "marshmallow-code/marshmallow": "341b927f219205704728c05cd61f04d7e9727523",
    "pallets/flask": "2ac89889f4cc330eabd50f295dcef02828522c69",
    "pallets/jinja": "5ef70112a1ff19c05324ff889dd30405b1002044",
    "pallets/markupsafe": "1251593f6b0e3b45f2cc8aba662622bc22d6a5e2",
    "pallets/werkzeug": "1b00618e787f40dfb21eba29caf8f8be7c8e1d93",
    "psf/requests": "1f6589ec3a1ee910f9a65cc3ceac60b26677bc0e",
    "pydantic/pydantic-settings": "d26fc0c3944fe68cf169f86386988bb83e3df2d8",
    "pytest-dev/iniconfig": "71901257f6cbf660e77b1077e00f11a0f440be1e",
    "pytest-dev/pytest-mock": "9b666cdeff8bd396510e8f52633915a6d57a5f3c",
    "pytest-dev/pytest-xdist": "f63b6a25b4eb932385c6ee4651eac5c08fbd3a20",
    "python-attrs/cattrs": "82b02c07ca535a1ba656b935767d819eac9d383b",
    "python-babel/babel": "6ba6701e790f2f4b482ab5919cdf79f9cfef259b",
    "python-jsonschema/referencing": "8ccb19f6c00e6313f35d24ef09f3b89a5529d183",
    "python-trio/trio": "60d0c2f84854ec6ef74995663dcdce3296840485",
    "sqlalchemy/alembic": "20e58db01cad3432c24734e11b893303cdb687a4",
    "tox-dev/filelock": "61511ebc1cc5d40b28f8584f1078e63f2d63fb02",
    "tox-dev/platformdirs": "b2f29d8e8c17ac18299c2a3e1833620281bb57d2",
    "tqdm/tqdm": "f6a30fab726ab8e794a9db88b4392ce207760937",
    "urllib3/urllib3": "6a8536b6e1b0cbe69ae801337c599951e527ae29",
    "yaml/pyyaml": "d51d8a138f7230834fc6e95635ff09ebd329185f",
}

SQUASH_RE = re.compile(r"\(#(\d+)\)\s*$")
MERGE_RE = re.compile(r"^Merge pull request #(\d+)")
RELEASE_RE = re.compile(r"^(release|bump version|version|prepare|back to dev|start version|bump to)\b|^v?\d+\.\d+",
                        re.IGNORECASE)
LICENCE_FILES = ("LICENSE", "LICENSE.txt", "LICENSE.md", "LICENSE.rst", "LICENCE", "COPYING", "LICENSE.MIT")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), *args], check=True, capture_output=True,
                          text=True, encoding="utf-8", errors="replace").stdout


def halves(projects: list[str]) -> dict[str, str]:
    """``fit`` or ``held-out`` per project, never per PR: projects ordered by the SHA-256 of their name, the first
    half (rounded up) fit, the rest held out."""
    ordered = sorted(projects, key=lambda name: hashlib.sha256(name.encode()).hexdigest())
    cut = (len(ordered) + 1) // 2
    return {name: "fit" if k < cut else "held-out" for k, name in enumerate(ordered)}


def licence(repo: Path, head: str) -> str:
    names = set(git(repo, "ls-tree", "--name-only", head).split())
    for name in LICENCE_FILES:
        if name in names:
            text = git(repo, "show", f"{head}:{name}")
            if "LICENSE.APACHE2" in text and "LICENSE.MIT" in text:
                return "MIT OR Apache-2.0"
            if "Apache License" in text and "Redistribution and use" in text:
                return "Apache-2.0 AND BSD-3-Clause"
            if "Permission is hereby granted, free of charge" in text:
                return "MIT"
            if "Apache License" in text:
                return "Apache-2.0"
            if "Redistribution and use in source and binary forms" in text:
                return "BSD-3-Clause" if "Neither the name" in text or "names of its" in text else "BSD-2-Clause"
            if "Mozilla Public License" in text:
                return "MPL-2.0"
            return f"see {name}"
    return "unknown"


def is_test(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return (path.startswith(("test/", "tests/", "testing/")) or "/tests/" in path or "/test/" in path
            or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py")


def candidate(repo: Path, sha: str, parents: list[str]) -> dict[str, str] | None:
    message = git(repo, "log", "-1", "--format=%B", sha).strip()
    subject, _, rest = message.partition("\n")
    if len(parents) == 2 and MERGE_RE.match(subject):
        base, head = parents
        title, _, body = rest.strip().partition("\n")
    elif len(parents) == 1 and SQUASH_RE.search(subject):
        base, head = parents[0], sha
        title, body = subject, rest
    else:
        return None
    title, body = title.strip(), body.strip()
    if not title or RELEASE_RE.search(title) or title.lower().startswith(("[pre-commit.ci]", "build(deps)")):
        return None
    numstat = git(repo, "diff", "--numstat", "--no-renames", base, head).splitlines()
    paths, lines = [], 0
    for row in numstat:
        added, removed, path = row.split("\t", 2)
        if added == "-":
            continue
        paths.append(path)
        lines += int(added) + int(removed)
    product = [p for p in paths if p.endswith(".py") and not is_test(p) and not p.startswith(("docs/", "doc/"))]
    tests = [p for p in paths if is_test(p) and p.endswith(".py")]
    if not product or not tests or lines > MAX_LINES:
        return None
    number = (MERGE_RE.match(subject) or SQUASH_RE.search(subject))
    assert number is not None
    return {"base": base, "head": head, "title": title, "body": body, "number": number.group(1)}


def build(mirrors: Path) -> list[dict[str, str]]:
    prs: list[dict[str, str]] = []
    for project, pinned in sorted(PROJECTS.items()):
        repo = mirrors / project.replace("/", "+") / "repo"
        if not repo.exists():
            raise SystemExit(f"{repo}: no mirror of {project} (fetch github:{project} first)")
        kept = 0
        for row in git(repo, "rev-list", "--first-parent", "--parents", f"--max-count={SCAN}", pinned).splitlines():
            sha, *parents = row.split()
            found = candidate(repo, sha, parents)
            if found is None:
                continue
            name = project.split("/", 1)[1]
            prs.append({"id": f"{name}#{found['number']}", "project": name, "repo": project,
                        "licence": licence(repo, pinned), "base": found["base"],
                        "head": found["head"], "title": found["title"], "body": found["body"]})
            kept += 1
            if kept == PER_PROJECT:
                break
    split = halves(sorted({pr["project"] for pr in prs}))
    for pr in prs:
        pr["half"] = split[pr["project"]]
    return prs


def main() -> None:
    mirrors = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/.mirror")
    prs = build(mirrors)
    OUT.write_text(json.dumps(prs, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    projects = sorted({p["project"] for p in prs})
    print(f"{len(prs)} PRs from {len(projects)} projects -> {OUT.relative_to(ROOT)}")
    for name in projects:
        rows = [p for p in prs if p["project"] == name]
        print(f"  {name:28} {rows[0]['half']:9} {rows[0]['licence']:18} {len(rows)}")


if __name__ == "__main__":
    main()
