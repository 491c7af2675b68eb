"""Wait for an hour's input before routing it, with a deadline and a clear failure; wait for the
join witnesses of an hour's window before its join stage (:class:`JoinWitnessSensor`).

An hour is complete when:

* no marker is configured (``input_marker`` unset): its grace period after the hour's end has
  passed. Whatever arrived by then is routed; nothing at all is an explicit empty batch.
* a marker is configured (e.g. ``_SUCCESS``, written by the producer last): the grace period has
  passed *and* the marker exists under the hour's prefix. When the deadline passes without it, the
  sensor fails, without retrying, naming the feed, the hour and the prefix it looked under.

Two ways to wait, neither holding a worker slot between checks:

* ``reschedule`` mode (the default): the task re-runs :meth:`HourInputSensor.poke` every
  ``poke_interval``.
* ``deferrable=True``: the wait happens in the triggerer. The grace period is one
  ``DateTimeTrigger``; the marker of an ``s3://`` prefix is waited for by the amazon provider's
  ``S3KeyTrigger`` — the trigger its deferrable ``S3KeySensor`` uses — with the deadline as the
  deferral's timeout, after which the sensor checks once more and fails naming the prefix.

Why not ``S3KeySensor`` itself: the key is not known when the DAG is written (the prefix comes
from the catalog, at run time, per feed's layout), the embedded mode's prefixes are ``file://``
folders, an hour without a marker is complete by the clock alone, and its deadline failure must
name the prefix and not retry. So the sensor keeps those semantics and hands the provider's
trigger exactly the part that fits: waiting for one S3 key. It does so only where the trigger
reaches the same endpoint as feedrouter: with an aws connection (``s3_conn_id``, which names the
endpoint), or with no custom ``FEEDROUTER_S3_ENDPOINT_URL``, and where ``aiobotocore`` (the
provider's ``aiobotocore`` extra, which the trigger's async client needs) is installed; otherwise
it polls by deferring to a timer (``poke_interval``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from feedrouter.airflow.errors import task_outcome
from feedrouter.airflow.hours import HourBatch
from feedrouter.airflow.operators import BATCH_LABEL, FeedrouterHookMixin
from feedrouter.airflow.settings import InputPolicy
from feedrouter.catalog import status
from feedrouter.delivery import is_input_key
from feedrouter.errors import WitnessesNotReady

if TYPE_CHECKING:
    from airflow.sdk import Context

#: How Airflow tells a resumed task that its deferral timed out (``TriggerFailureReason``).
TRIGGER_TIMEOUT = "Trigger timeout"


@dataclass(frozen=True)
class Look:
    """What one check of an hour's prefix found."""

    prefix: str
    objects: int
    marked: bool

    @property
    def xcom(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "objects": self.objects}


class HourInputSensor(BaseSensorOperator, FeedrouterHookMixin):
    """Succeed once one feed's hour of input is complete; XCom: the prefix and its object count.

    Args:
        batch: ``{"feed": …, "hour": "YYYY-MM-DDTHH"}`` (templated; mapped over the run's batches).
        policy: marker, grace and deadline; default: the ``input_marker``, ``input_grace`` and
            ``input_deadline`` settings, read at poke time.
        deferrable: wait in the triggerer (see the module) instead of rescheduling.
    """

    template_fields: Sequence[str] = ("batch",)
    ui_color = "#fcf3cf"

    def __init__(
        self,
        *,
        batch: dict[str, str],
        policy: InputPolicy | None = None,
        deferrable: bool = False,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("mode", "reschedule")
        kwargs["map_index_template"] = kwargs.get("map_index_template") or BATCH_LABEL
        super().__init__(**kwargs)
        self.batch = batch
        self.policy = policy
        self.deferrable = deferrable

    # -- both modes -------------------------------------------------------------------------------

    def _policy(self) -> InputPolicy:
        return self.policy or InputPolicy.from_settings(self.hook.settings)

    def poke(self, context: Context) -> bool | PokeReturnValue:
        batch, policy, now = HourBatch.from_dict(self.batch), self._policy(), _now()
        if now < batch.end + policy.grace:
            self.log.info(
                "%s: the hour is not over yet (waiting until %s)", batch.label, batch.end + policy.grace
            )
            return False
        look = self._look(batch, policy)
        if look.marked:
            return PokeReturnValue(True, look.xcom)
        if now >= batch.end + policy.deadline:
            raise self._overdue(batch, policy, look)
        self.log.info(
            "%s: %d objects, no %s yet under %s", batch.label, look.objects, policy.marker, look.prefix
        )
        return False

    def _look(self, batch: HourBatch, policy: InputPolicy) -> Look:
        with self.catalog(f"looking up the input prefix of {batch.label}") as conn:
            prefix = status.batch_prefix(conn, batch.feed, batch.hour)
        with task_outcome(f"listing the input of {batch.label}"):
            store = self.hook.store(prefix)
            keys = [key for key in store.list("") if is_input_key(key)]  # markers and temp files aside
            marked = policy.marker is None or store.exists(policy.marker)
        if marked:
            self.log.info("%s: input complete, %d objects under %s", batch.label, len(keys), prefix)
        return Look(prefix, len(keys), marked)

    def _overdue(self, batch: HourBatch, policy: InputPolicy, look: Look) -> AirflowFailException:
        return AirflowFailException(
            f"{batch.label}: no {policy.marker} marker under {look.prefix} {policy.deadline} after the hour "
            f"ended ({look.objects} objects there): the producer of feed {batch.feed} did not finish "
            "this hour. Once the hour is complete, write the marker and clear this task."
        )

    # -- deferrable mode --------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        return self.check(context)

    def check(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Check the hour now; complete, fail past the deadline, or defer to the next wait."""
        if event is not None and event.get("status") == "error":
            raise AirflowException(f"waiting for the input marker failed: {event.get('message')}")
        batch, policy, now = HourBatch.from_dict(self.batch), self._policy(), _now()
        if now < batch.end + policy.grace:
            self._defer_until(batch.end + policy.grace)
        look = self._look(batch, policy)
        if look.marked:
            return look.xcom
        if now >= batch.end + policy.deadline:
            raise self._overdue(batch, policy, look)
        self._defer_for_marker(look.prefix, policy.marker or "", batch.end + policy.deadline - now)
        return None  # not reached: defer raises

    def _defer_until(self, moment: datetime) -> None:
        from airflow.providers.standard.triggers.temporal import DateTimeTrigger

        self.defer(trigger=DateTimeTrigger(moment=moment), method_name="check")

    def _defer_for_marker(self, prefix: str, marker: str, left: timedelta) -> None:
        """Wait in the triggerer for ``marker`` under an ``s3://`` prefix, at most ``left``;
        anything else is checked again after ``poke_interval``."""
        from airflow.providers.amazon.aws.triggers.s3 import S3KeyTrigger

        key = self._s3_key(prefix, marker)
        if key is None:
            self._defer_until(_now() + min(left, timedelta(seconds=float(self.poke_interval))))
            return
        bucket, object_key = key
        trigger = S3KeyTrigger(
            bucket_name=bucket,
            bucket_key=object_key,
            aws_conn_id=self.hook.s3_conn_id,
            poke_interval=float(self.poke_interval),
        )
        self.defer(trigger=trigger, method_name="check", timeout=left)

    def _s3_key(self, prefix: str, marker: str) -> tuple[str, str] | None:
        """Bucket and key of the marker, when the provider's trigger reaches feedrouter's S3."""
        from feedrouter.storage.s3 import S3Store

        store = self.hook.store(prefix)
        if not isinstance(store, S3Store):
            return None
        if self.hook.s3_conn_id is None and self.hook.settings.s3_endpoint_url:
            return None  # the trigger's S3Hook would ask AWS, not the configured endpoint
        if importlib.util.find_spec("aiobotocore") is None:
            return None  # the trigger's async S3 client (the provider's "aiobotocore" extra)
        return store.bucket, f"{store.prefix}/{marker}" if store.prefix else marker

    def resume_execution(self, next_method: str, next_kwargs: dict[str, Any] | None, context: Context) -> Any:
        # The deadline is the deferral's timeout: look once more (the marker may have just come),
        # then fail naming the prefix, not with Airflow's bare "Trigger timeout" (and not retried).
        if next_method == "__fail__" and (next_kwargs or {}).get("error") == TRIGGER_TIMEOUT:
            batch, policy = HourBatch.from_dict(self.batch), self._policy()
            look = self._look(batch, policy)
            if look.marked:
                return look.xcom
            raise self._overdue(batch, policy, look)
        return super().resume_execution(next_method, next_kwargs, context)


class JoinWitnessSensor(BaseSensorOperator, FeedrouterHookMixin):
    """Succeed once the join stage of one feed's hour can run: at once when the feed's latest plan
    build has no join subscription, else when every hour of the joins' window (this feed's and
    each feed they read, from the ``route_start`` hour on) has its witnesses written by stage 1,
    or was routed (the join stage back-fills what it lacks).

    It waits for *witnesses* only, never for the join results of earlier hours: each hour's join
    stage reads its window's witnesses, so hours caught up in parallel or backfilled out of order
    deliver the same pairs. While an hour of the window is not routed yet (FR609) it reschedules.

    Args:
        batch: ``{"feed": …, "hour": "YYYY-MM-DDTHH"}`` (templated; mapped over the run's batches).
    """

    template_fields: Sequence[str] = ("batch",)
    ui_color = "#f5eef8"

    def __init__(self, *, batch: dict[str, str], **kwargs: Any) -> None:
        kwargs.setdefault("mode", "reschedule")
        kwargs["map_index_template"] = kwargs.get("map_index_template") or BATCH_LABEL
        super().__init__(**kwargs)
        self.batch = batch

    def poke(self, context: Context) -> bool:
        from feedrouter.airflow import routing

        batch = HourBatch.from_dict(self.batch)
        with task_outcome(f"checking the join witnesses of {batch.label}"):
            try:
                found = routing.join_readiness(self.hook, batch, self.stream_start())
            except WitnessesNotReady as exc:
                self.log.info("%s: %s", batch.label, exc)
                return False
        if found == "no-joins":
            self.log.info("%s: the feed's plan has no join subscription: nothing to wait for", batch.label)
        else:
            self.log.info("%s: the witnesses of the joins' window are written", batch.label)
        return True


def _now() -> datetime:
    return datetime.now(timezone.utc)
