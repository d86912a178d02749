"""`config_drive` on create, as Nova takes it: any of its boolean spellings, kept as "True"
or "" and shown so by server show; anything else is a 400 in Nova's fault format."""

import pytest

from tests.integration.test_server_lifecycle import MV, V, boot_body, cloud, ok, show_server  # noqa: F401


@pytest.mark.parametrize("asked, shown", [(True, "True"), ("yes", "True"), ("1", "True"), (False, ""),
                                          ("off", ""), (None, "")])
async def test_a_server_shows_whether_it_asked_for_a_config_drive(cloud, asked, shown):  # noqa: F811
    h = cloud
    extra = {} if asked is None else {"config_drive": asked}
    created = await ok(await h.http.post(V + "/servers", headers={**h.alice, **MV}, json=boot_body(h, **extra)), 202)
    server = await show_server(h, created["server"]["id"])
    assert server["config_drive"] == shown


@pytest.mark.parametrize("asked", ["maybe", "", 1, {"x": 1}])
async def test_a_config_drive_that_is_no_boolean_is_refused(cloud, asked):  # noqa: F811
    h = cloud
    resp = await h.http.post(V + "/servers", headers={**h.alice, **MV}, json=boot_body(h, config_drive=asked))
    assert resp.status == 400
    assert "badRequest" in await resp.json()
