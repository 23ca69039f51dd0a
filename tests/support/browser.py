"""Debian's Chromium (``/usr/bin/chromium``, installed by .ci/run) driven by Playwright for
Python, pointed at that binary: nothing is downloaded (``playwright install`` is never run).
The flags keep Chromium off the network it would otherwise call at every start."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext

CHROMIUM = os.environ.get("TOOLBRIDGE_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def need_chromium() -> None:
    """Skip unless Chromium and Playwright are both here (CI installs both: .ci/run)."""
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        pytest.skip("Playwright for Python is not installed (the dev extra brings it)")


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    from playwright.async_api import async_playwright

    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def chromium_profile(profile: str) -> AsyncIterator[BrowserContext]:
    """Chromium with a profile on disk (``profile``: its folder), as a person's browser keeps
    one: its history is in ``<profile>/Default/History`` once the browser is closed."""
    from playwright.async_api import async_playwright

    async with async_playwright() as driver:
        context = await driver.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=FLAGS
        )
        try:
            yield context
        finally:
            await context.close()
