import base64

import pytest

from nova_async.common import errors
from nova_async.compute.build import drive_content
from nova_async.network.messages import IpInfo, Vif

UUID = "0f7c3c4e-8b1e-4a53-9d1a-2f6a3c1b2d4e"
RAW = b"#!/bin/sh\necho '\xff' \"$(id)\"\n"


def row(**kw):
    values = {"uuid": UUID, "display_name": "web 1", "project_id": "p1", "hostname": "web-1",
              "launch_index": 2, "availability_zone": None, "user_data": base64.b64encode(RAW).decode()}
    values.update(kw)
    return values


def vif(*ips: IpInfo) -> Vif:
    return Vif(port_id="port-1", network_id="net-1", network_name="n", mac_address="fa:16:3e:00:00:01",
               ips=list(ips), mtu=1450)


def test_the_drive_tells_the_guest_its_row_and_its_ports():
    content = drive_content(row(), [vif(IpInfo(address="10.0.0.5", version=4, subnet_id="s",
                                               cidr="10.0.0.0/24", gateway="10.0.0.1"))])
    assert (content.uuid, content.name, content.hostname, content.launch_index) == (UUID, "web 1", "web-1", 2)
    assert content.availability_zone == "nova" and content.project_id == "p1"
    assert content.user_data == RAW  # the API's base64, decoded to the user's bytes
    [nic] = content.nics
    assert (nic.ip_address, nic.netmask, nic.gateway, nic.mac, nic.mtu) == (
        "10.0.0.5", "255.255.255.0", "10.0.0.1", "fa:16:3e:00:00:01", 1450)


def test_no_user_data_and_ipv6_only_ports():
    content = drive_content(row(user_data=None), [vif(IpInfo(address="fd00::5", version=6, subnet_id="s",
                                                             cidr="fd00::/64"))])
    assert content.user_data is None and content.nics == ()


def test_bad_stored_values_fail_the_build_clearly():
    with pytest.raises(errors.InvalidInput, match="user_data"):
        drive_content(row(user_data="not base64!"), [])
    with pytest.raises(errors.InvalidInput, match="CIDR"):
        drive_content(row(), [vif(IpInfo(address="10.0.0.5", version=4, subnet_id="s", cidr="bogus"))])
