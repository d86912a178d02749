"""Requests that are wrong at the HTTP level, sent byte for byte over a socket (a client
library refuses to send most of them): each gets an answer below 500, never a dropped
connection or silence."""

from __future__ import annotations

import asyncio

from tests.integration.fuzz.cloud import Cloud

C = b"/compute/v2.1"
AUTH = b"X-Auth-Token: admin\r\nX-Auth-Project-Id: admin\r\n"


def request(first_line: bytes, headers: bytes = b"", body: bytes = b"", *, length: bool = True) -> bytes:
    sized = b"Content-Length: %d\r\n" % len(body) if length and body else b""
    return first_line + b"\r\nHost: localhost\r\nConnection: close\r\n" + AUTH + headers + sized + b"\r\n" + body


JSON = b"Content-Type: application/json\r\n"
ODDITIES = {
    # headers aiohttp's parser or our middleware refuse
    "NUL in a header": request(b"GET " + C + b"/servers HTTP/1.1", b"X-Auth-Project-Id: a\x00b\r\n"),
    "control character in a header": request(b"GET " + C + b"/servers HTTP/1.1", b"X-Thing: a\x01b\r\n"),
    "header without a colon": request(b"GET " + C + b"/flavors HTTP/1.1", b"NoColonHere\r\n"),
    "header name with a space": request(b"GET " + C + b"/flavors HTTP/1.1", b"Bad Name: x\r\n"),
    "header longer than 8190 bytes": request(b"GET " + C + b"/flavors HTTP/1.1", b"X-Long: " + b"x" * 9000 + b"\r\n"),
    "Latin-1 bytes in a header": request(b"GET " + C + b"/servers HTTP/1.1", b"X-Auth-Project-Id: \xe9\xff\r\n"),
    "junk microversion": request(b"GET " + C + b"/servers HTTP/1.1", b"OpenStack-API-Version: compute \xff\xfe\r\n"),
    # request lines
    "bytes that are not UTF-8 in the path": request(b"GET " + C + b"/flavors/\xff\xfe HTTP/1.1"),
    "a request line of 9000 bytes": request(b"GET " + C + b"/flavors/" + b"x" * 9000 + b" HTTP/1.1"),
    "an absolute URL": request(b"GET http://localhost" + C + b"/flavors HTTP/1.1"),
    "no HTTP version": b"GET " + C + b"/flavors\r\n\r\n",
    "HTTP/2.0 in text": request(b"GET " + C + b"/flavors HTTP/2.0"),
    "a made-up method": request(b"FROB " + C + b"/flavors HTTP/1.1"),
    "a method with a space": request(b"GE T " + C + b"/flavors HTTP/1.1"),
    "a path of %": request(b"GET " + C + b"/flavors/% HTTP/1.1"),
    "a path that climbs": request(b"GET /compute/../../../etc/passwd HTTP/1.1"),
    # bodies and their framing
    "Content-Length that is not a number": request(b"POST " + C + b"/flavors HTTP/1.1",
                                                   JSON + b"Content-Length: abc\r\n", b"{}", length=False),
    "negative Content-Length": request(b"POST " + C + b"/flavors HTTP/1.1", JSON + b"Content-Length: -1\r\n",
                                       b"{}", length=False),
    "two different Content-Lengths": request(b"POST " + C + b"/flavors HTTP/1.1",
                                             JSON + b"Content-Length: 2\r\nContent-Length: 3\r\n", b"{}",
                                             length=False),
    "Content-Length shorter than the body": request(b"POST " + C + b"/flavors HTTP/1.1",
                                                    JSON + b"Content-Length: 1\r\n", b"{}", length=False),
    "Content-Length and chunked together": request(b"POST " + C + b"/flavors HTTP/1.1",
                                                   JSON + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                                                   b"2\r\n{}\r\n0\r\n\r\n", length=False),
    "a chunk size that is not hex": request(b"POST " + C + b"/flavors HTTP/1.1",
                                            JSON + b"Transfer-Encoding: chunked\r\n", b"zz\r\n{}\r\n0\r\n\r\n",
                                            length=False),
    "an unknown transfer encoding": request(b"POST " + C + b"/flavors HTTP/1.1",
                                            JSON + b"Transfer-Encoding: rot13\r\n", b"{}", length=False),
    "a gzip body that is not gzip": request(b"POST " + C + b"/flavors HTTP/1.1",
                                            JSON + b"Content-Encoding: gzip\r\n", b"{not gzip}"),
    "an image upload that is not gzip": request(b"PUT /image/v2/images/{image_id}/file HTTP/1.1",
                                                b"Content-Type: application/octet-stream\r\n"
                                                b"Content-Encoding: gzip\r\n", b"not gzip at all"),
    "a JSON body over client_max_size": request(b"POST " + C + b"/flavors HTTP/1.1", JSON,
                                                b'{"flavor": "' + b"x" * (1024 * 1024 + 10) + b'"}'),
    "a chunked body over client_max_size": request(
        b"POST /network/v2.0/networks HTTP/1.1", JSON + b"Transfer-Encoding: chunked\r\n",
        b"".join(b"%x\r\n%s\r\n" % (65536, b" " * 65536) for _ in range(20)) + b"0\r\n\r\n", length=False),
    "Expect: 100-continue with junk": request(b"POST " + C + b"/flavors HTTP/1.1",
                                              JSON + b"Expect: 100-bananas\r\n", b"{}"),
}


async def exchange(cloud: Cloud, raw: bytes) -> bytes:
    """Everything the server answers to `raw` before it closes the connection."""
    server = cloud.h.http.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        writer.write(raw)
        try:
            await writer.drain()
        except ConnectionError:
            pass  # refused before it was all sent: the answer is still there to read
        async with asyncio.timeout(20):
            return await reader.read()
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except ConnectionError:
            pass


async def test_http_oddities_get_an_answer_below_500(cloud):
    # An image with no data yet, so that its upload reads the body.
    resp = await cloud.h.http.post("/image/v2/images", headers=cloud.h.alice, json={
        "name": "empty", "disk_format": "raw", "container_format": "bare"})
    image_id = (await resp.json())["id"].encode()
    wrong = []
    for what, raw in ODDITIES.items():
        answer = await exchange(cloud, raw.replace(b"{image_id}", image_id))
        status_line = answer.split(b"\r\n", 1)[0]
        parts = status_line.split(b" ")
        if not status_line.startswith(b"HTTP/") or len(parts) < 2 or not parts[1].isdigit():
            wrong.append(f"{what}: no answer ({answer[:120]!r})")
        elif int(parts[1]) >= 500:
            wrong.append(f"{what}: {status_line.decode(errors='replace')} {answer[-300:]!r}")
    assert not wrong, "\n".join(wrong)
