"""A small Dockerfile linter for the rules LogoMesh's image must keep (hadolint is not installable offline).

Rules, each reported as a :class:`Finding` with its line number:

- ``pinned-base``: every ``FROM`` names an image with an explicit version tag (``X.Y.Z``) or a digest, never
  ``latest`` or no tag; ``ARG`` defaults are substituted first; earlier stages may be named as bases.
- ``non-root``: the last ``USER`` of the final stage is set and is neither ``root`` nor uid ``0``.
- ``no-secret``: no ``ENV``/``ARG`` whose name looks like a secret (token, password, private key, webhook
  secret) carries a value, and none names one at all in ``ARG`` (build args end up in the image history).
- ``healthcheck``: the final stage has a ``HEALTHCHECK``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

SECRET_NAME = re.compile(r"(TOKEN|PASSWORD|PASSWD|SECRET|PRIVATE_KEY|API_KEY|CREDENTIAL)", re.IGNORECASE)
VERSION_TAG = re.compile(r"^\d+\.\d+\.\d+([.-][\w.-]+)?$")


@dataclass(frozen=True)
class Instruction:
    line: int
    keyword: str
    args: str


@dataclass(frozen=True)
class Finding:
    rule: str
    line: int
    message: str


def parse(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined; comments and blank lines dropped."""
    instructions: list[Instruction] = []
    buffer: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not buffer and (not stripped or stripped.startswith("#")):
            continue
        if buffer and stripped.startswith("#"):
            continue  # a comment inside a continued instruction is dropped by docker too
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer.append(stripped[:-1])
            continue
        buffer.append(stripped)
        joined = " ".join(part.strip() for part in buffer if part.strip())
        keyword, _, args = joined.partition(" ")
        instructions.append(Instruction(start, keyword.upper(), args.strip()))
        buffer = []
    return instructions


def _key_values(args: str) -> dict[str, str]:
    """``ENV``/``ARG``/``LABEL`` pairs: ``A=1 B="x y"`` or the legacy ``A value`` form."""
    tokens = shlex.split(args, posix=True)
    if len(tokens) >= 1 and "=" not in tokens[0]:
        return {tokens[0]: " ".join(tokens[1:])}
    pairs: dict[str, str] = {}
    for token in tokens:
        name, _, value = token.partition("=")
        pairs[name] = value
    return pairs


def _substitute(value: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), value)


def _tag_is_pinned(image: str) -> bool:
    if "@sha256:" in image:
        return True
    name = image.rsplit("/", 1)[-1]
    if ":" not in name:
        return False
    tag = name.rsplit(":", 1)[1]
    return tag != "latest" and bool(VERSION_TAG.match(tag))


def lint(text: str) -> list[Finding]:
    instructions = parse(text)
    findings: list[Finding] = []
    global_args: dict[str, str] = {}
    stages: set[str] = set()
    seen_from = False
    final_user: Instruction | None = None
    final_healthcheck = False
    for ins in instructions:
        if ins.keyword == "ARG":
            pairs = _key_values(ins.args)
            for name, value in pairs.items():
                if SECRET_NAME.search(name):
                    findings.append(Finding("no-secret", ins.line, f"ARG {name} looks like a secret"))
                if not seen_from:
                    global_args[name] = value.strip('"')
        elif ins.keyword == "ENV":
            for name, value in _key_values(ins.args).items():
                if SECRET_NAME.search(name) and value:
                    findings.append(Finding("no-secret", ins.line, f"ENV {name} carries a secret value"))
        elif ins.keyword == "FROM":
            seen_from = True
            final_user, final_healthcheck = None, False
            words = [w for w in ins.args.split() if not w.startswith("--")]
            image = _substitute(words[0], global_args)
            if len(words) >= 3 and words[1].upper() == "AS":
                stages.add(words[2].lower())
            if image.lower() in stages or image == "scratch":
                continue
            if "$" in image:
                findings.append(Finding("pinned-base", ins.line, f"base {words[0]} has no ARG default"))
            elif not _tag_is_pinned(image):
                findings.append(Finding("pinned-base", ins.line, f"base {image} is not pinned to a version"))
        elif ins.keyword == "USER":
            final_user = ins
        elif ins.keyword == "HEALTHCHECK":
            final_healthcheck = ins.args.upper() != "NONE"
    if final_user is None:
        findings.append(Finding("non-root", 0, "the final stage never sets USER: it runs as root"))
    else:
        user = final_user.args.split(":", 1)[0].strip()
        if user in {"root", "0"}:
            findings.append(Finding("non-root", final_user.line, "the final stage runs as root"))
    if not final_healthcheck:
        findings.append(Finding("healthcheck", 0, "the final stage has no HEALTHCHECK"))
    return findings


def final_stage(text: str) -> list[Instruction]:
    instructions = parse(text)
    last_from = max(i for i, ins in enumerate(instructions) if ins.keyword == "FROM")
    return instructions[last_from:]
