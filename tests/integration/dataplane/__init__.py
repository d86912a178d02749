"""Tests of the network data plane (nova_async/dataplane/)."""
