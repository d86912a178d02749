"""The servers' pages in a real browser, against one served process (simulated hosts of
test:///default, which reach ACTIVE at once) shared by the module's tests: a server launched
from the form turns ACTIVE in the list without the page reloading, stop is followed to
SHUTOFF, two launched at once, multi-select delete removes the rows; the quota's refusal and
a flavor bigger than any host (NoValidHost, with the scheduler's reason) are shown next to
the flavor field; the actions of one server's page follow its states (by keyboard too), and
a read answered after a newer event does not roll that page back; boot from volume, a volume
attached and detached, a floating IP allocated, associated and removed; and a user of another
project sees none of it, neither listed nor live.

"Without reloading" is checked with a marker set on `window` at log-in: a reload or a
navigation away would drop it."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from playwright.async_api import expect

from tests.browser.conftest import log_in, serving_module
from tests.waiting import until

pytestmark = pytest.mark.e2e
V = "/compute/v2.1"


class Admin:
    """The served process's REST APIs as its admin, for what a test sets up."""

    def __init__(self, http: aiohttp.ClientSession, served, token: str) -> None:
        self.http, self.url, self.token = http, served.url, token

    async def call(self, method: str, path: str, status: int, **kw):
        async with self.http.request(method, self.url + path, headers={"X-Auth-Token": self.token}, **kw) as resp:
            text = await resp.text()
            assert resp.status == status, f"{method} {path}: {resp.status} {text}"
            return await resp.json() if text else None

    async def flavor(self, name: str) -> str:
        return next(f["id"] for f in (await self.call("GET", V + "/flavors", 200))["flavors"] if f["name"] == name)

    async def demo_image(self) -> str:
        """The demo guest's machine image, which a fresh serve registers."""
        images = (await self.call("GET", "/image/v2/images", 200))["images"]
        return next(i["id"] for i in images if i["name"] == "nova-async-demo")


@pytest.fixture(scope="module")
async def served(pg_cluster, databases, tmp_path_factory):
    async with serving_module("dashboard", tmp_path_factory, pg_cluster, databases) as running:
        async with aiohttp.ClientSession() as http:
            admin = Admin(http, running, await running.token(http))
            for flavor in ({"name": "dash.tiny", "ram": 256, "vcpus": 1, "disk": 1},
                           {"name": "dash.small", "ram": 512, "vcpus": 1, "disk": 1},
                           # more memory than the simulated host has, within the quota
                           {"name": "dash.big", "ram": 40 * 1024, "vcpus": 1, "disk": 1},
                           # more than the project's quota (50 GiB)
                           {"name": "dash.huge", "ram": 64 * 1024 * 1024, "vcpus": 1, "disk": 1}):
                await admin.call("POST", V + "/flavors", 200, json={"flavor": flavor})
        yield running


@pytest.fixture
async def admin(served):
    async with aiohttp.ClientSession() as http:
        yield Admin(http, served, await served.token(http))


async def admin_page(browser, served):
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    await log_in(page, served.url, "admin", served.password, "admin")
    await page.evaluate("window.__notReloaded = true")
    return context, page


async def launch(page, name: str, flavor: str) -> None:
    await page.get_by_role("link", name="Launch").click()
    await page.get_by_label("Name").fill(name)
    options = page.locator("select[name=flavorRef] option", has_text=flavor)
    await page.get_by_label("Flavor").select_option(await options.first.get_attribute("value"))
    await page.get_by_role("button", name="Launch").click()


async def test_launch_follow_stop_and_delete_live(browser, screens, served):
    context, page = await admin_page(browser, served)
    await page.get_by_role("link", name="Servers").first.click()
    await page.get_by_role("link", name="Launch").wait_for()
    await screens.shot(page, "servers-empty")

    await page.get_by_role("link", name="Launch").click()
    await page.get_by_label("Name").wait_for()
    await screens.shot(page, "launch-form")
    await page.goto(f"{served.url}/dashboard/#/servers")   # same document: only the hash changes
    await launch(page, "web-1", "dash.tiny")

    # The form follows the new server on the stream and goes to the list once it is ACTIVE.
    await page.wait_for_url("**/#/servers")
    row = page.locator("table[aria-label=Servers] tbody tr", has_text="web-1")
    await expect(row.locator(".badge")).to_have_text("ACTIVE", timeout=30000)
    await expect(row).to_contain_text("running")
    await expect(row).to_contain_text("dash.tiny")
    assert await page.evaluate("window.__notReloaded === true")
    await screens.shot(page, "servers-active")
    await page.set_viewport_size({"width": 390, "height": 844})   # a phone: the table as cards
    await expect(row.locator("td[data-label=Status]")).to_be_visible()
    await screens.shot(page, "servers-phone")
    await page.set_viewport_size({"width": 1280, "height": 900})

    # The filter box is instant.
    await page.get_by_label("Filter servers").fill("no-such-name")
    await expect(row).to_be_hidden()
    await page.get_by_label("Filter servers").fill("web")
    await expect(row).to_be_visible()

    # One server's page: stop, confirmed, and its status follows to SHUTOFF.
    await row.get_by_role("link", name="web-1").click()
    header = page.locator("h1 .badge")
    await expect(header).to_have_text("ACTIVE")
    await screens.shot(page, "server-overview")
    await page.get_by_role("toolbar", name="Actions").get_by_role("button", name="Stop").click()
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_contain_text("Stop it?")
    await dialog.get_by_role("button", name="Stop").click()
    await expect(header).to_have_text("SHUTOFF", timeout=30000)
    await expect(page.get_by_role("toolbar", name="Actions").get_by_role("button", name="Start")).to_be_enabled()
    await screens.shot(page, "server-stopped")

    await page.get_by_role("tab", name="Events").click()
    await expect(page.get_by_role("table", name="Instance actions")).to_contain_text("stop")
    await screens.shot(page, "server-events")
    await page.get_by_role("tab", name="Log").click()
    await page.get_by_role("button", name="Refresh").wait_for()
    await screens.shot(page, "server-log")

    await page.get_by_role("link", name="Activity").click()
    await expect(page.get_by_role("list", name="Activity, newest first")).to_contain_text("SHUTOFF")
    await page.get_by_role("button", name="Switch light or dark").click()
    await screens.shot(page, "activity-dark")
    await page.get_by_role("button", name="Switch light or dark").click()

    # Multi-select delete: the row goes when the stream says the server is gone.
    await page.get_by_role("link", name="Servers").first.click()
    await row.get_by_role("checkbox").check()
    await page.get_by_role("button", name="Delete selected (1)").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    await expect(row).to_have_count(0, timeout=30000)
    await expect(page.get_by_text("No servers.")).to_be_visible()
    assert await page.evaluate("window.__notReloaded === true")
    await screens.shot(page, "servers-after-delete")

    # Two at once (count 2): the form follows both, named pair-1 and pair-2, to ACTIVE;
    # "select all" and one delete remove both.
    await page.get_by_role("link", name="Launch").click()
    await page.get_by_label("Name").fill("pair")
    await page.get_by_label("Count").fill("2")
    options = page.locator("select[name=flavorRef] option", has_text="dash.tiny")
    await page.get_by_label("Flavor").select_option(await options.first.get_attribute("value"))
    await page.get_by_role("button", name="Launch").click()
    await page.wait_for_url("**/#/servers")
    pair = page.locator("table[aria-label=Servers] tbody tr", has_text="pair-")
    await expect(pair.locator(".badge")).to_have_text(["ACTIVE", "ACTIVE"], timeout=30000)
    await page.get_by_label("Select all shown").check()
    await page.get_by_role("button", name="Delete selected (2)").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    await expect(pair).to_have_count(0, timeout=30000)
    assert await page.evaluate("window.__notReloaded === true")
    # Everything the page loaded came from the process (no CDN, nothing elsewhere).
    loaded = await page.evaluate("performance.getEntriesByType('resource').map((e) => e.name)")
    assert loaded and all(u.startswith(served.url) for u in loaded), loaded
    await context.close()


async def test_quota_and_no_valid_host_are_explained_next_to_the_flavor(browser, screens, served):
    context, page = await admin_page(browser, served)
    await page.get_by_role("link", name="Servers").first.click()
    # Refused at once (403): the quota's sentence under the flavor.
    await launch(page, "too-much", "dash.huge")
    error = page.locator('.field[data-field="flavorRef"] .error')
    await expect(error).to_contain_text("Quota exceeded for ram")
    await screens.shot(page, "launch-over-quota")
    # Accepted (202), then no host will do: the scheduler's reason, from the server's fault.
    await page.get_by_label("Name").fill("too-big")
    options = page.locator("select[name=flavorRef] option", has_text="dash.big")
    await page.get_by_label("Flavor").select_option(await options.first.get_attribute("value"))
    await page.get_by_role("button", name="Launch").click()
    await expect(error).to_contain_text("No valid host", timeout=30000)
    await expect(error.get_by_role("link", name="See the server")).to_be_visible()
    await screens.shot(page, "launch-no-valid-host")
    await error.get_by_role("link", name="See the server").click()
    await expect(page.locator(".fault")).to_contain_text("No valid host")
    await screens.shot(page, "server-fault")
    assert await page.evaluate("window.__notReloaded === true")
    await context.close()


async def test_another_project_sees_none_of_it(browser, screens, served, admin):
    flavor, image = await admin.flavor("dash.tiny"), await admin.demo_image()
    server = (await admin.call("POST", V + "/servers", 202, json={"server": {
        "name": "admins-only", "imageRef": image, "flavorRef": flavor, "networks": "none"}}))["server"]["id"]

    project = (await admin.call("POST", "/v3/projects", 201, json={"project": {
        "name": "other", "domain_id": "default"}}))["project"]["id"]
    user = (await admin.call("POST", "/v3/users", 201, json={"user": {
        "name": "olga", "password": "olga-secret", "domain_id": "default",
        "default_project_id": project}}))["user"]["id"]
    roles = (await admin.call("GET", "/v3/roles", 200))["roles"]
    role = next(r["id"] for r in roles if r["name"] in ("member", "_member_", "reader"))
    await admin.call("PUT", f"/v3/projects/{project}/users/{user}/roles/{role}", 204)

    context = await browser.new_context()
    page = await context.new_page()
    await log_in(page, served.url, "olga", "olga-secret", "other")
    await page.get_by_role("link", name="Servers").first.click()
    await expect(page.get_by_text("No servers.")).to_be_visible()
    await expect(page.locator("table[aria-label=Servers]")).not_to_contain_text("admins-only")
    await screens.shot(page, "other-project-servers")
    await page.goto(f"{served.url}/dashboard/#/servers/{server}")
    await expect(page.get_by_role("heading", name="Server not found")).to_be_visible()
    await screens.shot(page, "other-project-not-found")
    await page.get_by_role("link", name="Activity").click()
    seeded = page.get_by_role("list", name="Servers changed in the last 24 hours")
    await expect(seeded).not_to_contain_text("admins-only")

    # Live: the admin's server goes away, then olga launches one of her own. Her feed shows
    # hers, and nothing of the admin's delete, which was over before hers began.
    await admin.call("DELETE", f"{V}/servers/{server}", 204)

    async def gone() -> int:
        async with admin.http.get(f"{admin.url}{V}/servers/{server}", headers={"X-Auth-Token": admin.token}) as resp:
            return resp.status

    await until(gone, lambda status: status == 404, what="the admin's server deleted")
    async with admin.http.post(f"{served.url}/v3/auth/tokens", json={"auth": {"identity": {"methods": ["password"],
            "password": {"user": {"name": "olga", "domain": {"id": "default"}, "password": "olga-secret"}}},
            "scope": {"project": {"id": project}}}}) as resp:
        olga = Admin(admin.http, served, resp.headers["X-Subject-Token"])
    await olga.call("POST", V + "/servers", 202, json={"server": {
        "name": "olgas", "imageRef": image, "flavorRef": flavor, "networks": "none"}})
    feed = page.get_by_role("list", name="Activity, newest first")
    olgas_active = feed.locator("li", has_text="olgas").locator(".badge", has_text="ACTIVE")
    await expect(olgas_active).not_to_have_count(0, timeout=30000)
    await expect(feed).not_to_contain_text("admins-only")
    await expect(feed).not_to_contain_text(server[:8])
    await screens.shot(page, "other-project-activity")
    await context.close()


async def test_actions_follow_their_states(browser, screens, served, admin):
    server = (await admin.call("POST", V + "/servers", 202, json={"server": {
        "name": "acts", "imageRef": await admin.demo_image(), "flavorRef": await admin.flavor("dash.tiny"),
        "networks": "none"}}))["server"]["id"]
    context, page = await admin_page(browser, served)
    await page.goto(f"{served.url}/dashboard/#/servers/{server}")
    header = page.locator("h1 .badge")
    actions = page.get_by_role("toolbar", name="Actions")
    await expect(header).to_have_text("ACTIVE", timeout=30000)

    async def act(button: str, status: str, *, confirm: str | None = None) -> None:
        await actions.get_by_role("button", name=button, exact=True).click()
        if confirm:
            await page.get_by_role("dialog").get_by_role("button", name=confirm).click()
        await expect(header).to_have_text(status, timeout=30000)
        # the buttons come back once the task is over
        await expect(actions.get_by_role("button", name="Delete")).to_be_enabled()

    # By keyboard: Enter on the focused button; the focus stays in the toolbar when that
    # button turns disabled.
    pause = actions.get_by_role("button", name="Pause", exact=True)
    await expect(pause).to_be_enabled()   # focus() does not wait for it
    await pause.focus()
    await page.keyboard.press("Enter")
    await expect(header).to_have_text("PAUSED", timeout=30000)
    await expect(actions.get_by_role("button", name="Pause", exact=True)).to_be_disabled()
    await expect(actions.locator("button:focus")).to_have_count(1)
    await act("Unpause", "ACTIVE")
    await act("Suspend", "SUSPENDED")
    await act("Resume", "ACTIVE")
    await act("Hard reboot", "ACTIVE", confirm="Hard reboot")
    await act("Lock", "ACTIVE")
    # A lock changes no status or task: act() is back before the page has heard of it.
    await expect(actions.get_by_role("button", name="Unlock")).to_be_enabled(timeout=30000)
    await act("Unlock", "ACTIVE")

    # Resize through its dialog, then confirm it.
    await actions.get_by_role("button", name="Resize…").click()
    dialog = page.get_by_role("dialog", name="Resize")
    options = dialog.locator("select option", has_text="dash.small")
    await dialog.get_by_label("New flavor").select_option(await options.first.get_attribute("value"))
    await screens.shot(page, "server-resize-dialog", full_page=False)
    await dialog.get_by_role("button", name="Resize").click()
    await expect(header).to_have_text("VERIFY_RESIZE", timeout=30000)
    await screens.shot(page, "server-verify-resize")
    await act("Confirm resize", "ACTIVE")
    await expect(page.locator("dl.facts")).to_contain_text("dash.small")

    # Rebuild (choose the image) and a snapshot (name it), each through its dialog.
    await actions.get_by_role("button", name="Rebuild…").click()
    dialog = page.get_by_role("dialog", name="Rebuild")
    await dialog.get_by_label("Image").select_option(label="nova-async-demo")
    await dialog.get_by_role("button", name="Rebuild").click()
    await expect(page.locator(".toast", has_text="Rebuild: asked.")).to_be_visible()
    await expect(header).to_have_text("ACTIVE", timeout=30000)
    await page.get_by_role("tab", name="Events").click()
    await expect(page.get_by_role("table", name="Instance actions")).to_contain_text("rebuild")
    await page.get_by_role("tab", name="Overview").click()
    await expect(actions.get_by_role("button", name="Create image…")).to_be_enabled()
    await actions.get_by_role("button", name="Create image…").click()
    dialog = page.get_by_role("dialog", name="Create an image")
    await dialog.get_by_label("Image name").fill("acts-snap")
    await dialog.get_by_role("button", name="Create").click()
    await expect(page.locator(".toast", has_text="The image is being made")).to_be_visible()
    await context.close()
    await admin.call("DELETE", f"{V}/servers/{server}", 204)


async def test_a_read_answered_after_a_newer_event_does_not_roll_the_page_back(browser, served, admin):
    """The page reads the server once more after subscribing; on a busy machine that answer
    (taken while ACTIVE) can arrive after the stream's PAUSED. The page keeps PAUSED."""
    server = (await admin.call("POST", V + "/servers", 202, json={"server": {
        "name": "late-read", "imageRef": await admin.demo_image(), "flavorRef": await admin.flavor("dash.tiny"),
        "networks": "none"}}))["server"]["id"]
    await until(lambda: admin_status(admin, server), lambda s: s == "ACTIVE", what="the server ACTIVE")
    context, page = await admin_page(browser, served)
    reads, held, release = [], asyncio.Event(), asyncio.Event()

    async def hold_the_second_read(route):
        reads.append(route.request.url)
        if len(reads) != 2:
            return await route.continue_()
        answer = await route.fetch()        # the server as it is now: ACTIVE
        held.set()
        await release.wait()
        await route.fulfill(response=answer)

    await page.route(f"**{V}/servers/{server}", hold_the_second_read)
    await page.goto(f"{served.url}/dashboard/#/servers/{server}")
    header = page.locator("h1 .badge")
    await expect(header).to_have_text("ACTIVE", timeout=30000)
    await asyncio.wait_for(held.wait(), 30)
    await admin.call("POST", f"{V}/servers/{server}/action", 202, json={"pause": None})
    await expect(header).to_have_text("PAUSED", timeout=30000)
    async with page.expect_request_finished(lambda r: r.url.endswith(f"/servers/{server}")):
        release.set()
    await page.wait_for_timeout(500)    # what the late answer would do, it has done by now
    await expect(header).to_have_text("PAUSED")
    actions = page.get_by_role("toolbar", name="Actions")
    await expect(actions.get_by_role("button", name="Pause", exact=True)).to_be_disabled()
    await expect(actions.get_by_role("button", name="Unpause", exact=True)).to_be_enabled()
    await context.close()
    await admin.call("DELETE", f"{V}/servers/{server}", 204)


async def admin_status(admin, server: str) -> str:
    return (await admin.call("GET", f"{V}/servers/{server}", 200))["server"]["status"]


async def test_boot_from_volume_and_attach_a_volume(browser, screens, served, admin):
    context, page = await admin_page(browser, served)
    project = await page.evaluate("JSON.parse(sessionStorage.getItem('nova-async.session')).project.id")
    spare = (await admin.call("POST", f"/volume/v3/{project}/volumes", 202, json={"volume": {
        "name": "spare", "size": 1}}))["volume"]["id"]

    # Boot from volume: offered because the volume service answers; the image becomes a volume.
    await page.get_by_role("link", name="Servers").first.click()
    await page.get_by_role("link", name="Launch").click()
    await page.get_by_label("Name").fill("on-a-volume")
    options = page.locator("select[name=flavorRef] option", has_text="dash.tiny")
    await page.get_by_label("Flavor").select_option(await options.first.get_attribute("value"))
    await page.get_by_label("Create a volume from the image and boot from it").check()
    await page.get_by_label("Volume size (GB)").fill("1")
    await page.get_by_role("button", name="Launch").click()
    await page.wait_for_url("**/#/servers")
    row = page.locator("table[aria-label=Servers] tbody tr", has_text="on-a-volume")
    await expect(row.locator(".badge")).to_have_text("ACTIVE", timeout=60000)
    await expect(row).to_contain_text("(volume)")

    # Attach the spare volume through the dialog; it is listed, then detached.
    await row.get_by_role("link", name="on-a-volume").click()
    actions = page.get_by_role("toolbar", name="Actions")
    await actions.get_by_role("button", name="Attach volume…").click()
    dialog = page.get_by_role("dialog", name="Attach a volume")
    await dialog.get_by_label("Volume").select_option(spare)
    await dialog.get_by_role("button", name="Attach").click()
    volumes = page.locator("h2:text('Volumes') + ul")
    await expect(volumes).to_contain_text(spare, timeout=30000)
    await screens.shot(page, "server-with-volume")
    await volumes.locator("li", has_text=spare).get_by_role("button", name="Detach").click()
    await page.get_by_role("dialog").get_by_role("button", name="Detach").click()
    await expect(page.locator("main")).not_to_contain_text(spare, timeout=30000)
    assert await page.evaluate("window.__notReloaded === true")
    await context.close()


async def test_floating_ip_allocated_associated_and_removed(browser, screens, served, admin):
    public = (await admin.call("GET", "/network/v2.0/networks?router:external=true", 200))["networks"][0]["id"]
    net = (await admin.call("POST", "/network/v2.0/networks", 201, json={"network": {
        "name": "dashnet"}}))["network"]["id"]
    subnet = (await admin.call("POST", "/network/v2.0/subnets", 201, json={"subnet": {
        "network_id": net, "cidr": "10.252.9.0/24", "ip_version": 4}}))["subnet"]["id"]
    router = (await admin.call("POST", "/network/v2.0/routers", 201, json={"router": {
        "name": "dashrouter", "external_gateway_info": {"network_id": public}}}))["router"]["id"]
    await admin.call("PUT", f"/network/v2.0/routers/{router}/add_router_interface", 200, json={"subnet_id": subnet})
    flavor, image = await admin.flavor("dash.tiny"), await admin.demo_image()
    server = (await admin.call("POST", V + "/servers", 202, json={"server": {
        "name": "reachable", "imageRef": image, "flavorRef": flavor, "networks": [{"uuid": net}]}}))["server"]["id"]

    context, page = await admin_page(browser, served)
    await page.goto(f"{served.url}/dashboard/#/servers/{server}")
    await expect(page.locator("h1 .badge")).to_have_text("ACTIVE", timeout=30000)
    await expect(page.locator("dl.facts")).to_contain_text("dashnet: 10.252.9.")
    await page.get_by_role("toolbar", name="Actions").get_by_role("button", name="Associate floating IP…").click()
    dialog = page.get_by_role("dialog", name="Associate a floating IP")
    await dialog.get_by_label("Floating IP").select_option(label="Allocate a new one from public")
    await dialog.get_by_role("button", name="Associate").click()
    fips = page.locator("h2:text('Floating IPs') + ul")
    await expect(fips).to_contain_text("203.0.113.", timeout=30000)
    await screens.shot(page, "server-with-floating-ip")
    await fips.get_by_role("button", name="Disassociate").click()
    await page.get_by_role("dialog").get_by_role("button", name="Disassociate").click()
    await expect(page.locator("h2:text('Floating IPs') + p")).to_have_text("None.", timeout=30000)
    await context.close()
    await admin.call("DELETE", f"{V}/servers/{server}", 204)
