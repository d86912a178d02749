"""The RabbitMQ nodes a --transport names: one URL, oslo.messaging's list of nodes, or whole
URLs separated by commas; and no password in anything shown."""

import pytest

from nova_async import config
from nova_async.bus.brokers import broker_urls, redacted, shown


@pytest.mark.parametrize("transport, urls", [
    ("amqp://guest:guest@127.0.0.1:5672/", ["amqp://guest:guest@127.0.0.1:5672/"]),
    ("amqps://nova:s@mq/nova?heartbeat=10", ["amqps://nova:s@mq/nova?heartbeat=10"]),
    # oslo.messaging's form, as Nova's transport_url takes it: rabbit:// is amqp://
    ("rabbit://nova:s1@mq1:5672,nova:s2@mq2:5673/vh",
     ["amqp://nova:s1@mq1:5672/vh", "amqp://nova:s2@mq2:5673/vh"]),
    # a node without credentials takes the first node's
    ("rabbit://nova:s@mq1,mq2:5673,mq3/", ["amqp://nova:s@mq1/", "amqp://nova:s@mq2:5673/", "amqp://nova:s@mq3/"]),
    ("amqp://a:x@mq1:5672/,amqp://b:y@mq2:5672/", ["amqp://a:x@mq1:5672/", "amqp://b:y@mq2:5672/"]),
    ("rabbit://a:x@mq1,mq2/,amqp://b:y@mq3/", ["amqp://a:x@mq1/", "amqp://a:x@mq2/", "amqp://b:y@mq3/"]),
    ("amqp://n:p%40ss%2C@mq1,mq2/", ["amqp://n:p%40ss%2C@mq1/", "amqp://n:p%40ss%2C@mq2/"]),
])
def test_every_node_becomes_one_url(transport, urls):
    assert broker_urls(transport) == urls


@pytest.mark.parametrize("transport, message", [
    ("http://mq1/", "not a RabbitMQ URL"),
    ("amqp:///", "names no host"),
    ("amqp://u:secret@mq1:notaport/", "bad RabbitMQ URL"),
    ("amqp://u:secret@mq1/,kafka://u:secret@mq2/", "not a RabbitMQ URL"),
])
def test_a_bad_transport_is_refused_without_showing_its_password(transport, message):
    with pytest.raises(config.ConfigError, match=message) as refused:
        config.load(None, {("service", "transport"): transport})
    assert "secret" not in str(refused.value)


def test_logs_show_no_password_for_any_node():
    urls = broker_urls("rabbit://nova:s1@mq1:5672,nova:s2@mq2:5672/")
    assert shown(urls) == "amqp://nova:***@mq1:5672/, amqp://nova:***@mq2:5672/"
    assert redacted("amqp://mq1/") == "amqp://mq1/"


def test_the_quorum_option_is_read_from_the_file(tmp_path):
    path = tmp_path / "n.toml"
    path.write_text('[service]\ntransport = "rabbit://n:p@mq1,mq2/"\nrabbit_quorum_queue = true\n')
    assert config.load(str(path)).service.rabbit_quorum_queue is True
    assert config.load(None).service.rabbit_quorum_queue is False
