"""The load script, short: 16 clients for 3 s on two replicas and one Redis, nothing lost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.redis_fixtures import require

pytestmark = [pytest.mark.redis, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def test_a_short_load_run_has_no_errors_and_no_lost_updates() -> None:
    require("redis-server")
    command = [sys.executable, "benchmarks/load.py", "--clients", "16", "--duration", "3"]
    run = subprocess.run([*command, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=50)
    report = json.loads(run.stdout)
    assert (report["errors"], report["lost_updates"]) == (0, 0), report
    # How many calls fit in 3 s depends on the machine; that every client got a basket
    # and calls went beyond creating baskets (so the lost-update check saw adds) does not.
    assert report["calls"] > report["baskets"] >= 16 and run.returncode == 0
