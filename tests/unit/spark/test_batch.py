"""route_batch's checks before it opens anything (the batch itself: tests/integration)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from feedrouter.errors import HourError
from feedrouter.spark.batch import route_batch


class Untouchable:
    """A catalog engine or store that must not be used."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"{name} used before the hour was checked")


def test_a_time_inside_an_hour_is_refused_before_anything_is_opened() -> None:
    half_past = datetime(2026, 11, 22, 16, 30, tzinfo=timezone.utc)
    with pytest.raises(HourError, match="is not a whole hour") as caught:
        route_batch(Untouchable(), "news", half_past, plans_store=Untouchable())  # type: ignore[arg-type]
    assert caught.value.code == "FR608"
