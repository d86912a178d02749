from nova_async.dataplane.made import Made
async def test_made(pool):
    m = Made(pool, "h1")
    await m.record("namespace", "qdhcp-x", {"a": 1})
    await m.record("namespace", "qdhcp-x", {"a": 2})
    assert await m.listed("namespace") == {"qdhcp-x": {"a": 2}}
    await m.forget("namespace", "qdhcp-x")
    assert await m.listed("namespace") == {}
