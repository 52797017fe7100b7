"""The routing table on its own (no I/O): what a ``pull_request.edited`` delivery becomes, from real payloads."""

from __future__ import annotations

from typing import Any

import pytest

from app.receiver.routing import Ignored, ReviewRequest, route
from tests.app.conftest import INSTALLATION, fixture_payload


def edited(name: str, **pr_fields: Any) -> dict[str, Any]:
    """A COPY of a real ``pull_request.edited`` delivery (hub4j's captures carry no installation: added here)."""
    payload = fixture_payload("pull_request", name)
    payload["installation"] = {"id": INSTALLATION}
    payload["pull_request"].update(pr_fields)
    return payload


def test_a_retarget_to_another_base_branch_is_reviewed_again() -> None:
    payload = edited("pull_request_edited_base.json", draft=False)
    assert set(payload["changes"]) == {"base"} and payload["changes"]["base"]["ref"]["from"] == "develop"
    outcome = route("pull_request", payload, "retarget-1")
    assert outcome == ReviewRequest(
        "review", "retarget-1", INSTALLATION, "company-company/acme-rest-api-framework", 88,
        payload["pull_request"]["head"]["sha"], "pull_request.edited:base")


def test_a_retargeted_draft_follows_the_draft_setting() -> None:
    payload = edited("pull_request_edited_base.json")
    assert payload["pull_request"]["draft"] is True  # as captured
    assert route("pull_request", payload, "d") == Ignored("draft pull request (LOGOMESH_REVIEW_DRAFTS is off)")
    outcome = route("pull_request", payload, "d", review_drafts=True)
    assert isinstance(outcome, ReviewRequest) and outcome.reason == "pull_request.edited:base"


def test_a_retarget_that_also_renames_is_reviewed_once_as_a_retarget() -> None:
    payload = edited("pull_request_edited_base.json", draft=False)
    payload["changes"]["title"] = {"from": "Old title"}
    outcome = route("pull_request", payload, "d")
    assert isinstance(outcome, ReviewRequest) and outcome.reason == "pull_request.edited:base"


def test_a_title_edit_is_still_reviewed_as_an_edit() -> None:
    outcome = route("pull_request", edited("pull_request_edited_title.json", draft=False), "d")
    assert isinstance(outcome, ReviewRequest) and outcome.reason == "pull_request.edited"


@pytest.mark.parametrize("changes", [{}, {"maintainer_can_modify": {"from": False}}, None, ["base"], "base"])
def test_an_edit_of_anything_else_is_ignored(changes: Any) -> None:
    payload = edited("pull_request_edited_base.json", draft=False)
    payload["changes"] = changes
    outcome = route("pull_request", payload, "d")
    assert isinstance(outcome, Ignored) and "title/body/base" in outcome.reason


def test_a_retarget_of_a_closed_pull_request_is_ignored() -> None:
    payload = edited("pull_request_edited_base.json", draft=False, state="closed")
    assert route("pull_request", payload, "d") == Ignored("the pull request is closed")
