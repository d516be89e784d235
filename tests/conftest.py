"""Shared test settings: hypothesis profiles (CI keeps runs short; TOOLMEND_FUZZ=1 runs long)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fuzz", max_examples=20_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile("fuzz" if os.environ.get("TOOLMEND_FUZZ") else "default")
