"""The receiver's spool of deliveries it could not enqueue (app/receiver/spool.py), on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.receiver.spool import Spool, SpoolFull


def test_a_delivery_is_kept_once_in_arrival_order_and_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "spool" / "deliveries.sqlite3"
    spool = Spool(path)
    assert spool.put("d1", "pull_request", b'{"a": 1}')
    assert spool.put("d2", "issue_comment", b'{"b": 2}')
    assert not spool.put("d1", "pull_request", b'{"a": 1}')  # GitHub's redelivery during the outage
    spool.close()
    reopened = Spool(path)  # the receiver restarted before Redis came back: nothing is lost
    assert [(e.delivery, e.event, e.body) for e in reopened.oldest()] == [
        ("d1", "pull_request", b'{"a": 1}'), ("d2", "issue_comment", b'{"b": 2}')]
    reopened.remove("d1")
    assert [e.delivery for e in reopened.oldest()] == ["d2"] and len(reopened) == 1
    reopened.close()


def test_a_full_spool_refuses_rather_than_fill_the_disk(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s.sqlite3", max_entries=2)
    spool.put("d1", "ping", b"{}")
    spool.put("d2", "ping", b"{}")
    with pytest.raises(SpoolFull) as refused:
        spool.put("d3", "ping", b"{}")
    assert refused.value.entries == 2
    spool.close()
