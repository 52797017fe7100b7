"""The resolved set read from pip's report: every artefact pinned with its sha256, or no set at all."""

from __future__ import annotations

import json

from sandbox.resolve import MARK, Artefact, locked_requirements, parse_resolved, resolved_key
from sandbox.verify_env import findings

SHA = "ab" * 32


def output(items: list[list[str | None]]) -> str:
    return "pip says things\n" + MARK + " " + json.dumps(items) + "\n"


def test_a_resolved_set_is_sorted_normalised_and_locked_by_hash() -> None:
    found = parse_resolved(output([["Lm_Plain", "1.0.0", "http://i/lm_plain-1.0.0-py3-none-any.whl", SHA],
                                   ["attrs", "23.2.0", "http://i/attrs.whl", "CD" * 32]]))
    assert found == (Artefact("attrs", "23.2.0", "cd" * 32, "http://i/attrs.whl"),
                     Artefact("lm-plain", "1.0.0", SHA, "http://i/lm_plain-1.0.0-py3-none-any.whl"))
    assert locked_requirements(found) == (f"attrs==23.2.0 --hash=sha256:{'cd' * 32}\n"
                                          f"lm-plain==1.0.0 --hash=sha256:{SHA}\n")
    # the key is the artefacts' content: another URL for the same file is the same environment
    moved = tuple(Artefact(a.name, a.version, a.sha256, "http://mirror/" + a.name) for a in found)
    assert resolved_key(["image", "3.11"], found) == resolved_key(["image", "3.11"], moved)
    assert resolved_key(["image", "3.11"], found) != resolved_key(["image", "3.12"], found)
    other = (found[0], Artefact("lm-plain", "1.0.0", "ef" * 32, found[1].url))
    assert resolved_key(["image", "3.11"], found) != resolved_key(["image", "3.11"], other)


def test_an_artefact_without_a_hash_or_no_report_is_no_resolved_set() -> None:
    assert parse_resolved(output([["lm-plain", "1.0.0", "file:///x", None]])) is None
    assert parse_resolved(output([["lm-plain", "1.0.0", "http://i/x.whl", "not-a-hash"]])) is None
    assert parse_resolved("ERROR: No matching distribution found for lm-missing\n") is None
    assert parse_resolved(output([])) == ()


def test_the_verification_names_what_changed_and_what_no_record_lists() -> None:
    text = "changed lib/python3.11/site-packages/lm_plain/__init__.py\nunlisted lib/python3.11/site-packages/a.pth\n"
    assert findings(text + "LOGOMESH-VERIFIED\n") == (
        "lib/python3.11/site-packages/lm_plain/__init__.py differs from the hash its distribution's RECORD lists",
        "lib/python3.11/site-packages/a.pth is listed by no installed distribution's RECORD")
    assert findings("LOGOMESH-VERIFIED\n") == ()
    assert findings(text) == ("the verification of the environment did not finish",)
