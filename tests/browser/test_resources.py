"""The dashboard's resource pages in a real browser, against one served process for the module:
an image uploaded from a file input with its progress, flavors, key pairs made in the browser
and imported, a network with its subnet, a router with a gateway and an interface, a floating
IP, a security group rule, volumes, and the overview's quota bars and hosts' picture (which a
user of another project does not get). Every page's screenshot is saved (light, dark, phone)."""

from __future__ import annotations

import os
import re

import aiohttp
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from playwright.async_api import expect

from tests.browser.conftest import log_in, serving_module
from tests.waiting import until

# One worker runs them all (--dist loadgroup), so the module's one served process serves all.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("dashboard-resources")]

SLOW = 30_000  # ms: what the service does in the background (a volume made, a router plumbed)


@pytest.fixture(scope="module")
async def served(tmp_path_factory, pg_cluster, databases):
    async with serving_module("resources", tmp_path_factory, pg_cluster, databases) as s:
        yield s


async def admin_page(browser, served, **context):
    ctx = await browser.new_context(**context)
    page = await ctx.new_page()
    await log_in(page, served.url, "admin", served.password, "admin")
    return page


async def open_page(page, served, name: str, title: str):
    await page.goto(f"{served.url}/dashboard/#/{name}")
    await page.get_by_role("heading", name=title, level=1).wait_for()


async def confirm(page, action: str):
    await page.get_by_role("dialog", name="Confirm").get_by_role("button", name=action).click()


def row(page, text: str):
    return page.locator("#view tbody tr").filter(has_text=text)


async def test_upload_an_image_with_progress_and_delete_it(browser, served, screens):
    page = await admin_page(browser, served)
    await open_page(page, served, "images", "Images")
    await page.get_by_role("button", name="Upload image").click()
    dialog = page.get_by_role("dialog", name="Upload an image")
    await dialog.get_by_label("File").set_input_files(files=[{
        "name": "tiny-disk.raw", "mimeType": "application/octet-stream", "buffer": os.urandom(4 << 20)}])
    await expect(dialog.get_by_label("Name")).to_have_value("tiny-disk")
    await expect(dialog.get_by_label("Disk format")).to_have_value("raw")
    await dialog.get_by_role("button", name="Upload").click()

    progress = page.get_by_role("progressbar", name="Upload of tiny-disk")
    await expect(progress).to_have_js_property("value", 100, timeout=SLOW)
    await expect(page.locator(".uploads")).to_contain_text("100 % of 4.0 MiB · active")
    await expect(row(page, "tiny-disk")).to_contain_text("active")
    await expect(row(page, "tiny-disk")).to_contain_text("4.0 MiB")
    await screens.shot(page, "images-uploaded")

    await page.get_by_role("button", name="Delete image tiny-disk").click()
    await confirm(page, "Delete")
    await expect(row(page, "tiny-disk")).to_have_count(0)
    await page.context.close()


async def test_flavor_create_refused_twice_and_delete(browser, served, screens):
    page = await admin_page(browser, served)
    await open_page(page, served, "flavors", "Flavors")
    # With the keyboard: the button, Enter; the dialog's first field has the focus; Enter in a
    # field sends the form; Escape closes the dialog.
    for attempt in (1, 2):
        create = page.get_by_role("button", name="Create flavor")
        await expect(create).to_be_enabled()  # once the page has loaded: focus() does not wait
        await create.focus()
        await page.keyboard.press("Enter")
        dialog = page.get_by_role("dialog", name="Create a flavor")
        await expect(dialog.get_by_label("Name")).to_be_focused()
        await page.keyboard.type("m1.web")
        await dialog.get_by_label("vCPUs").fill("2")
        await dialog.get_by_label("RAM (MiB)").fill("1024")
        await dialog.get_by_label("Extra specs").fill("hw:cpu_policy=shared")
        await dialog.get_by_label("Root disk (GiB)").fill("5")
        await page.keyboard.press("Enter")
        if attempt == 1:
            await expect(dialog).to_have_count(0)
    # The second one's name is taken: said next to the name, the dialog stays open.
    await expect(dialog.locator(".field[data-field=name] .error")).to_contain_text("exists")
    await expect(dialog.get_by_label("Name")).to_be_focused()
    await screens.shot(page, "flavor-name-taken")
    await page.keyboard.press("Escape")
    await expect(dialog).to_have_count(0)

    flavor = row(page, "m1.web")
    await expect(flavor).to_contain_text("1024 MiB")
    await expect(flavor).to_contain_text("hw:cpu_policy=shared")
    await screens.shot(page, "flavors")
    await page.get_by_role("button", name="Delete flavor m1.web").click()
    await confirm(page, "Delete")
    await expect(flavor).to_have_count(0)
    await page.context.close()


async def test_keypair_made_in_the_browser_and_one_imported(browser, served, screens, tmp_path):
    page = await admin_page(browser, served)
    await open_page(page, served, "keypairs", "Key pairs")
    await page.get_by_role("button", name="Create key pair").click()
    await page.get_by_role("dialog", name="Create a key pair").get_by_label("Name").fill("browser-key")
    await page.get_by_role("dialog", name="Create a key pair").get_by_role("button", name="Create").click()
    shown = page.get_by_role("dialog", name="Your private key")
    async with page.expect_download() as downloading:
        await shown.get_by_role("link", name="Download private key (OpenSSH)").click()
    saved = tmp_path / "browser-key"
    await (await downloading.value).save_as(saved)
    async with page.expect_download() as downloading:
        await shown.get_by_role("link", name="Download as PKCS#8 PEM").click()
    pkcs8 = tmp_path / "browser-key.pem"
    await (await downloading.value).save_as(pkcs8)
    await screens.shot(page, "keypair-private-key")
    await shown.get_by_role("button", name="I have saved it").click()
    await expect(row(page, "browser-key")).to_contain_text("ssh")

    imported = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    await page.get_by_role("button", name="Import public key").click()
    dialog = page.get_by_role("dialog", name="Import a public key")
    await dialog.get_by_label("Name").fill("imported")
    await dialog.get_by_label("Public key").fill(imported)
    await dialog.get_by_role("button", name="Import").click()
    await expect(row(page, "imported")).to_have_count(1)
    await screens.shot(page, "keypairs")

    # The file saved is OpenSSH's own format, and its public half is what Nova keeps.
    private = serialization.load_ssh_private_key(saved.read_bytes(), password=None)
    async with aiohttp.ClientSession() as http:
        token = await served.token(http)
        async with http.get(f"{served.url}/compute/v2.1/os-keypairs/browser-key",
                            headers={"X-Auth-Token": token, "OpenStack-API-Version": "compute 2.100"}) as resp:
            stored = (await resp.json())["keypair"]["public_key"]
    ours = private.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    assert stored.split()[:2] == ours.split()[:2]
    same = serialization.load_pem_private_key(pkcs8.read_bytes(), password=None)
    assert same.private_bytes_raw() == private.private_bytes_raw()
    await page.context.close()


async def test_network_router_floating_ip_and_a_rule(browser, served, screens):
    page = await admin_page(browser, served)
    await open_page(page, served, "networks", "Networks")
    await page.get_by_role("button", name="Create network").click()
    dialog = page.get_by_role("dialog", name="Create a network")
    await dialog.get_by_label("Name", exact=True).fill("web-net")
    await dialog.get_by_label("Subnet name").fill("web-sub")
    # The service refuses the subnet: said next to its field, and the network made for it is
    # taken back (sending the form again makes one network, not two).
    await dialog.get_by_label("CIDR").fill("10.20.0/24")
    await dialog.get_by_role("button", name="Create").click()
    await expect(dialog.locator(".field[data-field=cidr] .error")).to_contain_text("not a valid CIDR")
    await dialog.get_by_label("CIDR").fill("10.20.0.0/24")
    await dialog.get_by_role("button", name="Create").click()
    await expect(row(page, "web-net")).to_have_count(1)
    await expect(row(page, "web-net")).to_contain_text("10.20.0.0/24")
    await expect(row(page, "web-net")).to_contain_text("gateway 10.20.0.1 · DHCP on")
    await screens.shot(page, "networks")

    await open_page(page, served, "routers", "Routers")
    await page.get_by_role("button", name="Create router").click()
    dialog = page.get_by_role("dialog", name="Create a router")
    await dialog.get_by_label("Name").fill("edge")
    await dialog.get_by_label("Interface on subnet").select_option(label="web-sub 10.20.0.0/24 (web-net)")
    await dialog.get_by_role("button", name="Create").click()
    edge = row(page, "edge")
    await expect(edge).to_contain_text("public 203.0.113.", timeout=SLOW)
    await expect(edge).to_contain_text("10.20.0.1")
    await screens.shot(page, "routers")

    await open_page(page, served, "floating-ips", "Floating IPs")
    await page.get_by_role("button", name="Allocate IP").click()
    dialog = page.get_by_role("dialog", name="Allocate a floating IP")
    await dialog.get_by_role("button", name="Allocate").click()
    address = row(page, "203.0.113.")
    await expect(address).to_have_count(1)
    await expect(address).to_contain_text("public")

    # Associated to a server on web-net (booted through the API: launching is another page's),
    # chosen by its name, then the server's port by its address.
    async with aiohttp.ClientSession() as http:
        await boot(http, served, "web1", "web-net")
    await address.get_by_role("button", name="Associate").click()
    dialog = page.get_by_role("dialog").filter(has_text="Associate 203.0.113.")
    await dialog.get_by_label("Server").select_option(label="web1")
    await expect(dialog.get_by_label("Port")).to_contain_text("10.20.0.")
    await dialog.get_by_role("button", name="Associate").click()
    await expect(address).to_contain_text("web1")
    await expect(address).to_contain_text("10.20.0.")
    await screens.shot(page, "floating-ips")
    await address.get_by_role("button", name="Disassociate").click()
    await confirm(page, "Disassociate")
    await expect(address).not_to_contain_text("web1")

    await open_page(page, served, "security-groups", "Security groups")
    await page.get_by_role("button", name="Add a rule to default").click()
    dialog = page.get_by_role("dialog", name="Add a rule to default")
    await dialog.get_by_label("Port (or from)").fill("22")
    await dialog.get_by_role("button", name="Add rule").click()
    await expect(row(page, "ingress").filter(has_text="tcp")).to_contain_text("22")
    await screens.shot(page, "security-groups")

    # The router's gateway cleared and set again; then the router deleted, its interface first.
    await open_page(page, served, "routers", "Routers")
    await page.get_by_role("button", name="Clear the gateway of edge").click()
    await confirm(page, "Clear gateway")
    await expect(edge.get_by_role("cell").nth(2)).to_have_text("none")
    await page.get_by_role("button", name="Set the gateway of edge").click()
    await page.get_by_role("dialog", name="Set the gateway of edge").get_by_role("button", name="Set gateway").click()
    await expect(edge).to_contain_text("public 203.0.113.", timeout=SLOW)
    await page.get_by_role("button", name="Delete router edge").click()
    await confirm(page, "Delete")
    await expect(edge).to_have_count(0, timeout=SLOW)
    await page.context.close()


async def test_volume_create_extend_delete(browser, served, screens):
    page = await admin_page(browser, served)
    await open_page(page, served, "volumes", "Volumes")
    await page.get_by_role("button", name="Create volume").click()
    dialog = page.get_by_role("dialog", name="Create a volume")
    await dialog.get_by_label("Name").fill("data")
    # Over the project's quota (1,000 GiB): the service's refusal, next to the size.
    await dialog.get_by_label("Size (GiB)").fill("5000")
    await dialog.get_by_role("button", name="Create").click()
    await expect(dialog.locator(".field[data-field=size] .error")).to_contain_text(re.compile("quota|exceed", re.I))
    await dialog.get_by_label("Size (GiB)").fill("1")
    await dialog.get_by_role("button", name="Create").click()
    data = row(page, "data")
    await expect(data).to_contain_text("available", timeout=SLOW)
    await page.get_by_role("button", name="Extend volume data").click()
    dialog = page.get_by_role("dialog", name="Extend data")
    await dialog.get_by_label("New size (GiB)").fill("2")
    await dialog.get_by_role("button", name="Extend").click()
    await expect(data).to_contain_text("2 GiB", timeout=SLOW)
    await expect(data).to_contain_text("available", timeout=SLOW)
    await screens.shot(page, "volumes")
    await page.get_by_role("button", name="Delete volume data").click()
    await confirm(page, "Delete")
    await expect(data).to_have_count(0, timeout=SLOW)
    await page.context.close()


async def test_overview_admin_and_another_projects_user(browser, served, screens):
    page = await admin_page(browser, served)
    elsewhere: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(served.url) else elsewhere.append(r.url))
    await page.goto(f"{served.url}/dashboard/#/overview")
    await expect(page.locator("#view section[aria-busy]")).to_have_count(0, timeout=SLOW)
    await expect(page.locator("[data-quota=Servers]")).to_contain_text(re.compile(r"\d+ of 10"))
    await expect(page.locator("[role=meter]")).not_to_have_count(0)
    # One ring per resource class; the test driver's host: 16 vCPUs × allocation ratio 4.
    rings = page.locator(".host svg g[role=img]")
    await expect(rings).to_have_count(3)
    await expect(rings.first).to_have_attribute("aria-label", re.compile(r"^vCPU: \d+ used of 64$"))
    await expect(rings.nth(1)).to_have_attribute("aria-label", re.compile(r"^RAM: .* used of "))
    await screens.shot(page, "overview-admin")
    await page.get_by_role("button", name="Switch light or dark").click()
    await expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    await screens.shot(page, "overview-admin-dark")
    await open_page(page, served, "security-groups", "Security groups")
    await screens.shot(page, "security-groups-dark")
    assert elsewhere == []  # everything the pages use comes from the process
    await page.context.close()

    # A phone's width (log_in waits for the menu, which a phone folds away: it narrows after).
    phone = await admin_page(browser, served)
    await phone.set_viewport_size({"width": 390, "height": 844})
    await phone.goto(f"{served.url}/dashboard/#/overview")
    await expect(phone.locator("#view section[aria-busy]")).to_have_count(0, timeout=SLOW)
    await screens.shot(phone, "overview-phone")
    await open_page(phone, served, "images", "Images")
    await expect(row(phone, "debian-cloud").first).to_be_visible()
    await screens.shot(phone, "images-phone")
    await phone.context.close()

    async with aiohttp.ClientSession() as http:
        await make_user(http, served, "carol", "carol-secret", "elsewhere")
    page = await (await browser.new_context()).new_page()
    await log_in(page, served.url, "carol", "carol-secret", "elsewhere")
    await page.goto(f"{served.url}/dashboard/#/overview")
    await expect(page.get_by_role("heading", name="Overview · elsewhere")).to_be_visible()
    await expect(page.locator("#view section[aria-busy]")).to_have_count(0, timeout=SLOW)
    await expect(page.locator("[data-quota=Servers]")).to_contain_text("0 of 10")
    await expect(page.locator("[data-quota=Networks]")).to_contain_text("0 of")
    await expect(page.locator("[data-quota='Floating IPs']")).to_contain_text("0 of")
    await expect(page.get_by_role("heading", name="Hosts")).to_have_count(0)
    await expect(page.locator(".host")).to_have_count(0)
    await screens.shot(page, "overview-other-project")
    await open_page(page, served, "floating-ips", "Floating IPs")
    await expect(page.locator("#view .empty")).to_contain_text("No floating IPs")
    await open_page(page, served, "networks", "Networks")
    await expect(row(page, "public")).to_have_count(1)
    await expect(row(page, "web-net")).to_have_count(0)
    await expect(page.get_by_role("button", name="Delete network public")).to_have_count(0)
    await open_page(page, served, "flavors", "Flavors")
    await expect(page.get_by_role("button", name="Create flavor")).to_have_count(0)
    await page.context.close()


async def make_user(http: aiohttp.ClientSession, served, name: str, password: str, project: str) -> None:
    """A project and a member of it, made with the identity API as an admin would."""
    token = await served.token(http)
    auth = {"X-Auth-Token": token}

    async def post(path: str, body: dict) -> dict:
        async with http.post(f"{served.url}/v3{path}", json=body, headers=auth) as resp:
            assert resp.status == 201, await resp.text()
            return await resp.json()

    p = (await post("/projects", {"project": {"name": project, "domain_id": "default"}}))["project"]
    u = (await post("/users", {"user": {"name": name, "password": password, "domain_id": "default",
                                        "default_project_id": p["id"]}}))["user"]
    async with http.get(f"{served.url}/v3/roles", params={"name": "member"}, headers=auth) as resp:
        role = (await resp.json())["roles"][0]
    async with http.put(f"{served.url}/v3/projects/{p['id']}/users/{u['id']}/roles/{role['id']}", headers=auth) as resp:
        assert resp.status == 204, await resp.text()


async def boot(http: aiohttp.ClientSession, served, name: str, network: str) -> None:
    """A server on `network`, made with the APIs, once ACTIVE (libvirt's test driver boots at once)."""
    token = await served.token(http)
    auth = {"X-Auth-Token": token, "OpenStack-API-Version": "compute 2.100"}
    async with http.get(f"{served.url}/network/v2.0/networks", params={"name": network}, headers=auth) as resp:
        net = (await resp.json())["networks"][0]["id"]
    async with http.get(f"{served.url}/image/v2/images", params={"name": "nova-async-demo"}, headers=auth) as resp:
        image = (await resp.json())["images"][0]["id"]
    async with http.post(f"{served.url}/compute/v2.1/flavors", headers=auth,
                         json={"flavor": {"name": f"for-{name}", "vcpus": 1, "ram": 256, "disk": 1}}) as resp:
        flavor = (await resp.json())["flavor"]["id"]
    async with http.post(f"{served.url}/compute/v2.1/servers", headers=auth, json={"server": {
            "name": name, "flavorRef": flavor, "imageRef": image, "networks": [{"uuid": net}]}}) as resp:
        assert resp.status == 202, await resp.text()
        server = (await resp.json())["server"]["id"]
    # What the dashboard associates is the server's port, there once the server is ACTIVE.

    async def show() -> dict:
        async with http.get(f"{served.url}/compute/v2.1/servers/{server}", headers=auth) as resp:
            return (await resp.json())["server"]

    await until(show, lambda x: x["status"] == "ACTIVE", what=f"{name} ACTIVE", interval=0.2)
