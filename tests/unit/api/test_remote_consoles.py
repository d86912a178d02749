"""Console URLs and the two diagnostics shapes, from plain values."""

from urllib.parse import parse_qs, urlsplit

from nova_async.api.handlers.diagnostics import legacy, standard
from nova_async.api.remote_consoles import console_url
from nova_async.compute.messages import CpuStats, Diagnostics, DiskStats, NicStats


def test_serial_urls_are_websockets_and_novnc_urls_name_their_websocket_path():
    assert console_url("http://h:8774", "serial", "T0k") == "ws://h:8774/compute/console/serial?token=T0k"
    assert console_url("https://h", "serial", "T0k") == "wss://h/compute/console/serial?token=T0k"
    page = urlsplit(console_url("https://h:1", "novnc", "T0k"))
    assert (page.scheme, page.netloc, page.path) == ("https", "h:1", "/compute/console/novnc/vnc_lite.html")
    # One query parameter, which noVNC decodes into its WebSocket's path.
    assert parse_qs(page.query) == {"path": ["compute/console/vnc?token=T0k"]}
    assert "&" not in page.query and "?" not in page.query


DIAG = Diagnostics(state="running", driver="libvirt", hypervisor="qemu", hypervisor_os="linux", uptime=7,
                   config_drive=True, memory_max_kib=262144, memory_used_kib=131072,
                   memory_stats={"actual": 262144, "rss": 131072},
                   cpus=[CpuStats(id=0, time=5)],
                   nics=[NicStats(device="tap1", mac_address="fa:16:3e:00:00:01", rx_octets=3, tx_drop=1)],
                   disks=[DiskStats(device="vda", read_bytes=10, read_requests=2, errors_count=0)])


def test_the_standard_shape_counts_devices_and_gives_memory_in_mib():
    d = standard(DIAG)
    assert (d["num_cpus"], d["num_nics"], d["num_disks"]) == (1, 1, 1)
    assert d["memory_details"] == {"maximum": 256, "used": 128}
    assert d["nic_details"][0]["mac_address"] == "fa:16:3e:00:00:01" and d["nic_details"][0]["rx_rate"] is None
    assert "device" not in d["nic_details"][0] and "device" not in d["disk_details"][0]


def test_the_legacy_shape_is_libvirts_flat_keys():
    d = legacy(DIAG)
    assert d["cpu0_time"] == 5 and d["memory"] == 262144 and d["memory-rss"] == 131072
    assert (d["vda_read"], d["vda_read_req"], d["vda_errors"]) == (10, 2, 0)
    assert (d["tap1_rx"], d["tap1_tx_drop"]) == (3, 1)
