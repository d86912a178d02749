"""The volume role: block storage (a Cinder v3 subset) on /volume, and volumes for the other
roles on the bus.

Volumes outlive servers. Their rows (volumes, volume_snapshots, volume_attachments in the
API database) are the truth; a backend (backends/) holds the bits: sparse raw files in the
state directory by default, or thin logical volumes in an LVM volume group. A request that
changes a volume commits its new state (creating, deleting, extending…) first, with a
conditional UPDATE from the state it leaves, and only then touches the backend, so that a
restart finds every unfinished change in the database and finishes or undoes it.

Compute hosts attach volumes the way Nova uses Cinder's attachments API, over the bus
(client.py): the API reserves an attachment, the host gives its connector and gets the
connection (a file or a block device on this machine), attaches the disk to the guest, and
completes the attachment; a detach ends with the attachment deleted.
"""
