import asyncio
import json
import shutil

import pytest

from nova_async.common.errors import InvalidInput
from nova_async.compute import config_drive
from nova_async.compute.config_drive import DriveContent, Nic, build_config_drive, drive_tree, hostname_for

UUID = "6f1c2a9e-1b1e-4c3b-9a55-0d1f2e3a4b5c"
TRICKY = b"#!/bin/sh\necho \"$(id)\" 'q' <>&; `x`\n\x00\xff binary tail"


def nic(**over) -> Nic:
    values = dict(port_id="0f0e0d0c-1111-2222-3333-444455556666", mac="52:54:00:AB:CD:EF",
                  ip_address="10.0.0.5", netmask="255.255.255.0", network_id="net-1", gateway="10.0.0.1")
    return Nic(**{**values, **over})


def content(**over) -> DriveContent:
    return DriveContent(**{"uuid": UUID, "name": "web 1", "project_id": "proj", "user_data": TRICKY,
                           "public_keys": {"mykey": "ssh-ed25519 AAAA me"}, "nics": (nic(),), **over})


def test_the_tree_holds_the_three_openstack_files():
    tree = drive_tree(content())
    assert sorted(tree) == ["openstack/latest/meta_data.json", "openstack/latest/network_data.json",
                            "openstack/latest/user_data"]


def test_user_data_is_stored_raw_byte_for_byte():
    assert drive_tree(content())["openstack/latest/user_data"] == TRICKY


def test_no_user_data_means_no_user_data_file():
    assert "openstack/latest/user_data" not in drive_tree(content(user_data=None))


def test_oversized_user_data_is_refused():
    with pytest.raises(InvalidInput, match="user data"):
        drive_tree(content(user_data=b"x" * (config_drive.MAX_USER_DATA + 1)))


def test_meta_data_shape():
    meta = json.loads(drive_tree(content(launch_index=2))["openstack/latest/meta_data.json"])
    assert meta == {"uuid": UUID, "name": "web 1", "hostname": "web-1", "launch_index": 2,
                    "availability_zone": "nova", "project_id": "proj",
                    "public_keys": {"mykey": "ssh-ed25519 AAAA me"}, "meta": {}}


def test_meta_data_is_ascii_json_whatever_the_name():
    raw = drive_tree(content(name='ünï "quoted" $(x)'))["openstack/latest/meta_data.json"]
    assert raw.isascii()
    assert json.loads(raw)["name"] == 'ünï "quoted" $(x)'


def test_network_data_shape():
    data = json.loads(drive_tree(content())["openstack/latest/network_data.json"])
    link_id = data["links"][0]["id"]
    assert data["links"] == [{"id": link_id, "vif_id": nic().port_id, "type": "phy",
                              "ethernet_mac_address": "52:54:00:ab:cd:ef", "mtu": 1500}]
    assert data["networks"] == [{"id": "network0", "type": "ipv4", "link": link_id, "ip_address": "10.0.0.5",
                                 "netmask": "255.255.255.0", "network_id": "net-1",
                                 "routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0",
                                             "gateway": "10.0.0.1"}]}]
    assert data["services"] == []


def test_a_network_without_gateway_has_no_routes():
    data = json.loads(drive_tree(content(nics=(nic(gateway=""),)))["openstack/latest/network_data.json"])
    assert data["networks"][0]["routes"] == []


@pytest.mark.parametrize("over, message", [
    ({"mac": "52:54:00:ab:cd"}, "MAC"),
    ({"ip_address": "10.0.0.300"}, "IPv4"),
    ({"netmask": "255.0.255.0"}, "IPv4"),
    ({"gateway": "192.168.1.1"}, "outside"),
    ({"mtu": 20}, "MTU"),
])
def test_bad_nic_settings_are_refused(over, message):
    with pytest.raises(InvalidInput, match=message):
        nic(**over)


def test_a_bad_uuid_is_refused():
    with pytest.raises(InvalidInput):
        drive_tree(content(uuid="not-a-uuid"))


@pytest.mark.parametrize("name, hostname", [("My Server!", "my-server"), ("db_01.prod", "db-01-prod"),
                                            ("!!!", "server"), ("x" * 80, "x" * 63)])
def test_hostnames_are_dns_labels(name, hostname):
    assert hostname_for(name) == hostname


def test_genisoimage_gets_paths_only():
    argv = config_drive._genisoimage_argv(config_drive.Path("/src"), config_drive.Path("/out/disk.config"))
    assert argv[0] == "genisoimage" and argv[-1] == "/src"
    assert argv[argv.index("-V") + 1] == "config-2"


async def isoinfo_extract(iso, path: str) -> bytes:
    proc = await asyncio.create_subprocess_exec("isoinfo", "-R", "-i", str(iso), "-x", path,
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    return out


@pytest.mark.skipif(not shutil.which("genisoimage") or not shutil.which("isoinfo"),
                    reason="genisoimage not installed")
async def test_the_iso_is_labelled_config_2_and_holds_the_tree(tmp_path):
    c = content(name='"; rm -rf / #')
    iso = await build_config_drive(c, tmp_path / "disk.config")
    data = iso.read_bytes()
    # The primary volume descriptor sits in sector 16; its volume id starts at byte 40.
    assert data[16 * 2048 + 40:16 * 2048 + 48] == b"config-2"
    assert await isoinfo_extract(iso, "/openstack/latest/user_data") == TRICKY
    meta = json.loads(await isoinfo_extract(iso, "/openstack/latest/meta_data.json"))
    assert meta["name"] == '"; rm -rf / #'
    assert not list(tmp_path.glob(".*.part"))
