"""Test-wide setup: the package from plugins/, and where the optional shared data lives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins"))

SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the project: CI has it, a user's clone does not (the test is skipped)."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside this clone (only CI and developers have it)")
    return SHARED_DATA
