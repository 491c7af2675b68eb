"""Wait for an hour's input before routing it, with a deadline and a clear failure.

An hour is complete when:

* no marker is configured (``FEEDROUTER_INPUT_MARKER`` unset): its grace period after the hour's end
  has passed. Whatever arrived by then is routed; nothing at all is an explicit empty batch.
* a marker is configured (e.g. ``_SUCCESS``, written by the producer last): the grace period has
  passed *and* the marker exists under the hour's prefix. When the deadline passes without it, the
  sensor fails, without retrying, naming the feed, the hour and the prefix it looked under.

The sensor runs in ``reschedule`` mode: between pokes it holds no worker slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException

from feedrouter.airflow.errors import task_outcome
from feedrouter.airflow.hours import HourBatch
from feedrouter.airflow.operators import BATCH_LABEL, FeedrouterHookMixin
from feedrouter.airflow.settings import InputPolicy
from feedrouter.catalog import status
from feedrouter.delivery import is_input_key

if TYPE_CHECKING:
    from airflow.sdk import Context


class HourInputSensor(BaseSensorOperator, FeedrouterHookMixin):
    """Succeed once one feed's hour of input is complete; XCom: the prefix and its object count.

    Args:
        batch: ``{"feed": …, "hour": "YYYY-MM-DDTHH"}`` (templated; mapped over the run's batches).
        policy: marker, grace and deadline; default: the ``input_marker``, ``input_grace`` and
            ``input_deadline`` settings, read at poke time.
    """

    template_fields: Sequence[str] = ("batch",)
    ui_color = "#fcf3cf"

    def __init__(self, *, batch: dict[str, str], policy: InputPolicy | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("mode", "reschedule")
        kwargs["map_index_template"] = kwargs.get("map_index_template") or BATCH_LABEL
        super().__init__(**kwargs)
        self.batch = batch
        self.policy = policy

    def poke(self, context: Context) -> bool | PokeReturnValue:
        batch = HourBatch.from_dict(self.batch)
        policy = self.policy or InputPolicy.from_settings(self.hook.settings)
        now = datetime.now(timezone.utc)
        if now < batch.end + policy.grace:
            self.log.info(
                "%s: the hour is not over yet (waiting until %s)", batch.label, batch.end + policy.grace
            )
            return False
        with self.catalog(f"looking up the input prefix of {batch.label}") as conn:
            prefix = status.batch_prefix(conn, batch.feed, batch.hour)
        with task_outcome(f"listing the input of {batch.label}"):
            store = self.hook.store(prefix)
            keys = [key for key in store.list("") if is_input_key(key)]  # markers and temp files aside
            marked = policy.marker is None or store.exists(policy.marker)
        if marked:
            self.log.info("%s: input complete, %d objects under %s", batch.label, len(keys), prefix)
            return PokeReturnValue(True, {"prefix": prefix, "objects": len(keys)})
        if now >= batch.end + policy.deadline:
            raise AirflowFailException(
                f"{batch.label}: no {policy.marker} marker under {prefix} {policy.deadline} after the hour "
                f"ended ({len(keys)} objects there): the producer of feed {batch.feed} did not finish "
                "this hour. Once the hour is complete, write the marker and clear this task."
            )
        self.log.info("%s: %d objects, no %s yet under %s", batch.label, len(keys), policy.marker, prefix)
        return False
