"""Tracing off (the default) costs one shared no-op context per span: nothing is made or recorded."""

from __future__ import annotations

from npc_memory.ops import tracing


def test_off_tracing_hands_out_one_shared_no_op() -> None:
    """With tracing off every span is the same no-op object, whatever its name and attributes."""
    first, second = tracing.span("db.statement"), tracing.span("embed", texts=3)
    assert first is second
    with first as inside:
        assert inside is None
