"""The dashboard in a real browser: Debian's chromium (`make test` installs it), driven by
Playwright for Python through `executable_path` (Playwright's own browser download is not
used). One browser per worker; each test gets fresh contexts (no shared cookies or storage)
and saves a screenshot of every page it looks at under its temp dir, for a person to see."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from nova_async.compute.guest_image import build_or_reuse
from tests.conftest import dsn_for
from tests.e2e.conftest import Served, serve

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is installed by `make test`")


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        # --no-sandbox: the tests run as root, where Chromium's sandbox refuses to start.
        # Nothing off this machine: no component updates, no metrics, no DNS prefetching, no
        # proxy, and every host but localhost and 127.0.0.1 resolves to nothing (the tests reach the
        # service at 127.0.0.1), so not even a lookup leaves.
        launched = await pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-component-update",
            "--disable-background-networking", "--no-first-run", "--metrics-recording-only",
            "--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"])
        try:
            yield launched
        finally:
            await launched.close()


class Screens:
    """Screenshots of a test's pages, numbered in the order taken, under its temp dir."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.taken: list[Path] = []

    async def shot(self, page, name: str, *, full_page: bool = True) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{len(self.taken) + 1:02d}-{name}.png"
        await page.screenshot(path=str(path), full_page=full_page)
        self.taken.append(path)
        return path


@pytest.fixture
def screens(tmp_path: Path) -> Screens:
    directory = Path(os.environ.get("DASHBOARD_SCREENSHOTS", tmp_path / "screenshots"))
    return Screens(directory / tmp_path.name if "DASHBOARD_SCREENSHOTS" in os.environ else directory)


async def log_in(page, base_url: str, user: str, password: str, project: str) -> None:
    """The login form, filled and sent as a person would; returns once the menu shows."""
    await page.goto(f"{base_url}/dashboard/")
    await page.get_by_label("User").fill(user)
    await page.get_by_label("Password").fill(password)
    await page.get_by_label("Project").fill(project)
    await page.get_by_role("button", name="Log in").click()
    await page.get_by_role("navigation", name="Sections").wait_for()


@contextlib.asynccontextmanager
async def serving_module(label: str, tmp_path_factory, pg_cluster, databases) -> AsyncIterator[Served]:
    """One `nova-async serve` on simulated hosts for a whole test module (its pages share it;
    starting one per test would cost the suite seconds each), on a database of its own. The
    demo guest is built first, so the service registers it as the image nova-async-demo that
    the pages' tests boot (on a fresh machine no other test may have built it yet)."""
    await build_or_reuse()
    name = await databases.take()
    try:
        async with serve(tmp_path_factory.mktemp(label) / "state", "--database", dsn_for(pg_cluster, name),
                         "--libvirt-uri", "test:///default") as served:
            yield served
    finally:
        databases.discard(name)
