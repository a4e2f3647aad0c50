"""Headless Chromium (Debian's /usr/bin/chromium) driven by Playwright; every request off 127.0.0.1 is blocked,
so a page that needs the internet fails here. `make browser-tools` installs both."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.harness import REPO

CHROMIUM = os.environ.get("PAGEMILL_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("PAGEMILL_TEST_ARTIFACTS", REPO / ".artifacts"))
LOCAL_HOSTS = {"127.0.0.1", "localhost"}


@dataclass
class Watched:
    """A page with its console errors, uncaught exceptions and the requests that tried to leave the machine."""

    page: Any
    errors: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert not self.blocked, f"the page reached for the network: {self.blocked}"
        assert not self.errors, f"console errors: {self.errors}"


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One Chromium for the browser tests, closed when the run leaves this package: Playwright's sync API keeps
    an event loop running in the main thread while it is open, which would break `asyncio.run` in later tests."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (make browser-tools)")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.skip(f"no Chromium at {CHROMIUM} (make browser-tools installs Debian's chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield browser
        browser.close()


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    watched = Watched(page)

    def offline(route: Any) -> None:
        if urlsplit(route.request.url).hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            watched.blocked.append(route.request.url)
            route.abort()

    page.route("**/*", offline)
    page.on("console", lambda message: message.type == "error" and watched.errors.append(message.text))
    page.on("pageerror", lambda error: watched.errors.append(f"uncaught: {error}"))
    yield watched
    context.close()
