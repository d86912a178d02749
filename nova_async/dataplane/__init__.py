"""The network data plane of one host: what makes the network service's records real.

Level-triggered, as a controller is: the desired state is read from the database
(desired.py), and each part makes the host match it, idempotently — bridges and DHCP
(dhcp.py), the metadata service (metadata.py), routers with SNAT and floating IPs
(routers.py), security groups (firewall.py). A change in the database notifies the
reconciler (reconcile.py), which runs another pass; a start (or a restart after a crash)
is one more pass, which also removes what the host has of ours that the database no
longer wants (made.py records what we made, before we make it)."""
