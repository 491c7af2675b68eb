"""The kernels' switch (:func:`feedrouter.kernel.requested`): the ``*_is_built_here`` tests skip
where it says the kernels are turned off, so a switch that misread the environment would silence
them; and the loaders honour it."""

from __future__ import annotations

import pytest

from feedrouter import kernel


@pytest.mark.parametrize("value", ["off", "OFF", "0", "false", "False", "no"])
def test_the_switch_turns_the_kernels_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("FEEDROUTER_KERNEL", value)
    assert not kernel.requested()
    assert kernel._load_plain("_clock") is None
    assert kernel._load() is None


@pytest.mark.parametrize("value", [None, "on", "1", "yes", "true"])
def test_the_kernels_are_asked_for_otherwise(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("FEEDROUTER_KERNEL", raising=False)
    else:
        monkeypatch.setenv("FEEDROUTER_KERNEL", value)
    assert kernel.requested()


def test_turned_off_puts_every_kernel_back() -> None:
    kept = {name: getattr(kernel, name) for name in kernel._KERNELS}
    with kernel.turned_off():
        assert all(getattr(kernel, name) is None for name in kernel._KERNELS)
    assert {name: getattr(kernel, name) for name in kernel._KERNELS} == kept
