from nova_async.compute.console import endpoint_in, last_lines, read_tail, render
from nova_async.compute.messages import ConsoleEndpoint, ConsoleKind


def test_last_lines_tails_as_nova_does_a_final_newline_ending_an_empty_line():
    data = b"one\ntwo\nthree\n"
    assert last_lines(data, 1) == b""                       # the empty line after the last newline
    assert last_lines(data, 2) == b"three\n"
    assert last_lines(data, 3).split(b"\n") == [b"two", b"three", b""]   # three lines, as Tempest counts
    assert last_lines(data, 4) == last_lines(data, 99) == last_lines(data, None) == data
    assert last_lines(data, 0) == b""
    assert last_lines(b"one\ntwo", 1) == b"two"
    assert last_lines(b"", 5) == b""


def test_render_strips_what_nova_strips_and_survives_bad_bytes():
    text = render(b"boot\r\n\x00\x1b[0mok\tdone\xff\xfe\n")
    assert text == "boot\n[0mok\tdone\ufffd\ufffd\n"


def test_read_tail_is_bounded_and_starts_at_a_line(tmp_path):
    log = tmp_path / "console.log"
    assert read_tail(log) == b""  # no console yet
    log.write_bytes(b"".join(b"line %05d \xc3\xa9\n" % i for i in range(1000)))
    tail = read_tail(log, max_bytes=100)
    assert len(tail) <= 100 and tail.startswith(b"line ") and tail.endswith(b"line 00999 \xc3\xa9\n")
    assert read_tail(log, max_bytes=1 << 20) == log.read_bytes()


# --- where the proxy finds a running guest's consoles (from libvirt's live XML) -----------

LIVE = """<domain type='qemu'><devices>
  <serial type='unix'><source mode='bind' path='/i/console.sock'/><log file='/i/console.log'/>
    <target type='isa-serial' port='0'/></serial>
  <console type='unix'><source mode='bind' path='/i/console.sock'/><target type='serial' port='0'/></console>
  <graphics type='vnc' port='5901' autoport='yes' listen='127.0.0.1'><listen type='address' address='127.0.0.1'/>
  </graphics></devices></domain>"""


def test_the_serial_socket_and_the_vnc_port_come_from_the_live_xml():
    assert endpoint_in(LIVE, ConsoleKind.SERIAL) == ConsoleEndpoint(path="/i/console.sock")
    assert endpoint_in(LIVE, ConsoleKind.VNC) == ConsoleEndpoint(host="127.0.0.1", port=5901)


def test_consoles_the_proxy_cannot_reach_are_none():
    pty = "<domain><devices><serial type='pty'><target port='0'/></serial></devices></domain>"
    assert endpoint_in(pty, ConsoleKind.SERIAL) is None and endpoint_in(pty, ConsoleKind.VNC) is None
    not_started = LIVE.replace("port='5901'", "port='-1'")
    assert endpoint_in(not_started, ConsoleKind.VNC) is None
    tcp = ("<domain><devices><serial type='tcp'><source mode='bind' host='127.0.0.1' service='4555'/>"
           "</serial></devices></domain>")
    assert endpoint_in(tcp, ConsoleKind.SERIAL) == ConsoleEndpoint(host="127.0.0.1", port=4555)
