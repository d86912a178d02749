"""What the metadata service tells a guest, path by path, from facts built by hand (no
network, no database): the documents of common/instance_metadata.py and the paths of
dataplane/metadata_api.py, as cloud-init and EC2 tools ask for them."""

import base64
import json

import pytest

from nova_async.common import errors
from nova_async.common.instance_metadata import (EC2_VERSIONS, OPENSTACK_VERSIONS, InstanceFacts, Nic,
                                                 network_data, openstack_meta_data)
from nova_async.dataplane.metadata_api import lookup
from nova_async.dataplane.metadata_source import facts as facts_from_rows

UUID = "6f1c2a9e-1b1e-4c3b-9a55-0d1f2e3a4b5c"
IMAGE = "0b7c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB me@laptop"
USER_DATA = b"#cloud-config\nruncmd: [\"echo '\\xff'\"]\n\x00\xff"


def nic(**over) -> Nic:
    values = dict(port_id="0f0e0d0c-1111-2222-3333-444455556666", mac="fa:16:3e:00:00:01",
                  ip_address="10.0.0.5", netmask="255.255.255.0", network_id="net-1", gateway="10.0.0.1")
    return Nic(**{**values, **over})


def facts(**over) -> InstanceFacts:
    values = dict(uuid=UUID, name="web 1", project_id="proj", launch_index=1, availability_zone="az1",
                  user_data=USER_DATA, public_keys={"laptop": KEY}, nics=(nic(dhcp=True),),
                  meta={"role": "web"}, key_type="ssh", reservation_id="r-abc123", instance_type="m1.small",
                  image_ref=IMAGE, security_groups=("default", "web"), floating_ips=("203.0.113.7",))
    return InstanceFacts(**{**values, **over})


def get(path: str, f: InstanceFacts | None = None) -> bytes:
    return lookup(f or facts(), path, "10.0.0.5")[0]


def text(path: str, f: InstanceFacts | None = None) -> str:
    return get(path, f).decode()


def test_version_listings():
    assert text("/openstack").splitlines() == [*OPENSTACK_VERSIONS, "latest"]
    assert text("/openstack/").splitlines()[:2] == ["2012-08-10", "2013-04-04"]
    assert text("/").splitlines() == [*EC2_VERSIONS, "latest"]
    assert "2020-10-14" in OPENSTACK_VERSIONS and "2009-04-04" in EC2_VERSIONS


@pytest.mark.parametrize("version, files", [
    ("latest", ["meta_data.json", "user_data", "vendor_data.json", "network_data.json", "vendor_data2.json"]),
    ("2012-08-10", ["meta_data.json", "user_data"]),
    ("2013-10-17", ["meta_data.json", "user_data", "vendor_data.json"]),
    ("2015-10-15", ["meta_data.json", "user_data", "vendor_data.json", "network_data.json"]),
])
def test_each_version_lists_its_files(version, files):
    assert text(f"/openstack/{version}/").splitlines() == files
    assert text(f"/openstack/{version}") == text(f"/openstack/{version}/")


def test_meta_data_json_latest():
    body, content_type = lookup(facts(), "openstack/latest/meta_data.json", "10.0.0.5")
    assert content_type == "application/json"
    assert json.loads(body) == {
        "uuid": UUID, "name": "web 1", "hostname": "web-1", "launch_index": 1, "availability_zone": "az1",
        "project_id": "proj", "public_keys": {"laptop": KEY},
        "keys": [{"name": "laptop", "type": "ssh", "data": KEY}], "meta": {"role": "web"},
        "devices": [], "dedicated_cpus": []}


def test_older_versions_leave_out_what_came_later():
    old = openstack_meta_data(facts(), "2012-08-10")
    assert "project_id" not in old and "devices" not in old and old["uuid"] == UUID
    liberty = openstack_meta_data(facts(), "2015-10-15")
    assert liberty["project_id"] == "proj" and "devices" not in liberty
    assert openstack_meta_data(facts(), "2016-06-30")["devices"] == []
    for version in OPENSTACK_VERSIONS:   # every version cloud-init may ask for answers
        assert json.loads(get(f"/openstack/{version}/meta_data.json"))["name"] == "web 1"


def test_user_data_is_served_byte_for_byte_and_404_without():
    assert get("/openstack/latest/user_data") == USER_DATA
    assert get("/latest/user-data") == USER_DATA
    with pytest.raises(errors.NotFound):
        get("/openstack/latest/user_data", facts(user_data=None))
    with pytest.raises(errors.NotFound):
        get("/latest/user-data", facts(user_data=None))
    assert "user_data" not in text("/openstack/latest/", facts(user_data=None)).splitlines()
    assert text("/latest", facts(user_data=None)) == "meta-data/"
    assert text("/latest/") == "meta-data/\nuser-data"


def test_vendor_data_is_empty_json():
    assert json.loads(get("/openstack/latest/vendor_data.json")) == {}
    assert json.loads(get("/openstack/latest/vendor_data2.json")) == {}
    with pytest.raises(errors.NotFound):   # came in 2016-10-06
        get("/openstack/2015-10-15/vendor_data2.json")


def test_network_data_dhcp_and_static():
    dhcp = json.loads(get("/openstack/latest/network_data.json"))
    assert dhcp["links"] == [{"id": "tap0f0e0d0c-11", "vif_id": nic().port_id, "type": "phy",
                              "ethernet_mac_address": "fa:16:3e:00:00:01", "mtu": 1500}]
    assert dhcp["networks"] == [{"id": "network0", "type": "ipv4_dhcp", "link": "tap0f0e0d0c-11",
                                 "network_id": "net-1"}]
    static = network_data((nic(dns=("192.0.2.53",), routes=(("192.168.0.0/16", "10.0.0.254"),)),))
    assert static["networks"][0]["type"] == "ipv4"
    assert static["networks"][0]["routes"] == [
        {"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "10.0.0.1"},
        {"network": "192.168.0.0", "netmask": "255.255.0.0", "gateway": "10.0.0.254"}]
    assert static["networks"][0]["services"] == [{"type": "dns", "address": "192.0.2.53"}]
    assert static["services"] == [{"type": "dns", "address": "192.0.2.53"}]


def test_ec2_meta_data_listing():
    assert text("/latest/meta-data/").splitlines() == [
        "ami-id", "ami-launch-index", "hostname", "instance-action", "instance-id", "instance-type",
        "local-hostname", "local-ipv4", "placement/", "public-hostname", "public-ipv4", "public-keys/",
        "reservation-id", "security-groups"]
    assert text("/latest/meta-data") == text("/latest/meta-data/")
    assert "placement/" not in text("/1.0/meta-data/").splitlines()


@pytest.mark.parametrize("path, value", [
    ("instance-id", "i-6f1c2a9e"), ("ami-id", "ami-0b7c1d2e"), ("local-ipv4", "10.0.0.5"),
    ("public-ipv4", "203.0.113.7"), ("hostname", "web-1"), ("local-hostname", "web-1"),
    ("placement/availability-zone", "az1"), ("reservation-id", "r-abc123"),
    ("security-groups", "default\nweb"), ("instance-type", "m1.small"), ("ami-launch-index", "1"),
    ("public-keys/", "0=laptop"), ("public-keys/0/", "openssh-key"), ("public-keys/0/openssh-key", KEY),
])
def test_ec2_values(path, value):
    assert text(f"/latest/meta-data/{path}") == value
    assert text(f"/2009-04-04/meta-data/{path}") == value


def test_ec2_without_key_or_floating_ip():
    bare = facts(public_keys={}, floating_ips=(), nics=())
    assert "public-keys/" not in text("/latest/meta-data/", bare).splitlines()
    assert text("/latest/meta-data/public-ipv4", bare) == ""
    assert text("/latest/meta-data/local-ipv4", bare) == "10.0.0.5"   # the asking address then


@pytest.mark.parametrize("path", [
    "/openstack/2011-01-01/meta_data.json", "/openstack/latest/nothing", "/openstack/latest/meta_data.json/x",
    "/2010-01-01/meta-data/", "/latest/meta-data/nothing", "/latest/meta-data/public-keys/0/_name",
    "/latest/meta-data/instance-id/x", "/nothing",
])
def test_unknown_paths_are_404(path):
    with pytest.raises(errors.NotFound):
        get(path)


def test_dot_dot_cannot_climb_out():
    assert text("/openstack/latest/../../latest/meta-data/instance-id") == "i-6f1c2a9e"


def test_facts_from_rows():
    row = {"uuid": UUID, "display_name": "db", "hostname": "", "project_id": "p", "user_id": "u",
           "reservation_id": "r-1", "launch_index": None, "flavor_name": "m1.tiny", "image_ref": IMAGE,
           "key_name": "k", "key_data": KEY, "user_data": base64.b64encode(USER_DATA).decode(),
           "metadata": {"a": "b"}, "availability_zone": None}
    nics = [{"port_id": "p1", "network_id": "n1", "mac_address": "FA:16:3E:00:00:02", "mtu": 1450,
             "ip_address": "10.1.0.4", "cidr": "10.1.0.0/24", "gateway_ip": "10.1.0.1", "enable_dhcp": False,
             "dns_nameservers": [], "host_routes": [{"destination": "10.2.0.0/24", "nexthop": "10.1.0.9"}]},
            {"port_id": "p1", "network_id": "n1", "mac_address": "fa:16:3e:00:00:02", "mtu": 1450,
             "ip_address": "10.1.0.8", "cidr": "10.1.0.0/24", "gateway_ip": None, "enable_dhcp": False,
             "dns_nameservers": [], "host_routes": []}]
    f = facts_from_rows(row, nics, {"key_type": None, "security_groups": ["default"], "floating_ips": []},
                        ("192.0.2.1",))
    assert f.user_data == USER_DATA and f.meta == {"a": "b"} and f.availability_zone == "nova"
    assert f.key_type == "ssh" and f.public_keys == {"k": KEY} and f.launch_index == 0
    [only] = f.nics   # one NIC per port, from its first address
    assert (only.ip_address, only.mac, only.mtu, only.dns) == ("10.1.0.4", "fa:16:3e:00:00:02", 1450, ("192.0.2.1",))
    assert only.routes == (("10.2.0.0/24", "10.1.0.9"),)
    broken = facts_from_rows({**row, "user_data": "not base64!"}, [], {"key_type": "x509", "security_groups": [],
                                                                      "floating_ips": []})
    assert broken.user_data is None and broken.key_type == "x509"
