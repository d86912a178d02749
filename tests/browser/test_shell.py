"""The dashboard's shell: a browser at `/` lands on the login form, a wrong password is told
so, the right one shows the menu; a JSON client at `/` still gets identity's versions."""

from __future__ import annotations

import aiohttp
import pytest

from tests.browser.conftest import log_in
from tests.e2e.conftest import serve

pytestmark = pytest.mark.e2e


async def test_login_and_the_root_redirect(browser, screens, database, tmp_path):
    async with serve(tmp_path / "state", "--database", database, "--libvirt-uri", "test:///default") as served:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{served.url}/", allow_redirects=False) as resp:
                assert resp.status == 300 and "versions" in await resp.json()
            async with http.get(f"{served.url}/", headers={"Accept": "text/html,*/*"},
                                allow_redirects=False) as resp:
                assert resp.status == 302 and resp.headers["Location"] == "/dashboard/"
            for hostile in ("../../etc/passwd", "%00", "%2e%2e/%2e%2e/etc/passwd", "x" * 5000):
                async with http.get(f"{served.url}/dashboard/{hostile}") as resp:
                    assert resp.status == 404, hostile

        context = await browser.new_context()
        page = await context.new_page()
        external: list[str] = []
        page.on("request", lambda r: None if r.url.startswith(served.url) else external.append(r.url))
        await page.goto(f"{served.url}/")
        assert page.url == f"{served.url}/dashboard/"
        await page.get_by_label("User").fill("admin")
        await page.get_by_label("Password").fill("wrong")
        await page.get_by_label("Project").fill("admin")
        await page.get_by_role("button", name="Log in").click()
        await page.get_by_role("alert").filter(has_text="not right").wait_for()
        await screens.shot(page, "login-refused")

        await log_in(page, served.url, "admin", served.password, "admin")
        await page.get_by_text("admin · admin (admin)").wait_for()
        await screens.shot(page, "after-login")
        await page.get_by_role("button", name="Log out").click()
        await page.get_by_role("button", name="Log in").wait_for()
        assert external == []
        await context.close()
