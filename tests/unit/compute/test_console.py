from nova_async.compute.console import last_lines, read_tail, render


def test_last_lines_counts_a_final_line_without_newline():
    data = b"one\ntwo\nthree\n"
    assert last_lines(data, 1) == b"three\n"
    assert last_lines(data, 2) == b"two\nthree\n"
    assert last_lines(data, 3) == last_lines(data, 99) == last_lines(data, None) == data
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
