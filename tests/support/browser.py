"""Headless Chromium for the tests that look at a page (Debian's ``chromium``, ``make chromium``;
``MQBALANCE_CHROMIUM`` names another binary). A missing browser fails the test: it never skips."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def chromium() -> str:
    """The Chromium binary to run."""
    found = os.environ.get("MQBALANCE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "Chromium missing: make chromium (apt-get install chromium), or set MQBALANCE_CHROMIUM"
    return found


def headless(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium once with ``args`` (``--screenshot=…``, ``--dump-dom``, a URL), a fresh
    profile under ``tmp``, and time for stylesheets, scripts and images to load before the capture."""
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",  # root in CI containers
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",  # no connections out of a closed network
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}",
        "--virtual-time-budget=5000",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
