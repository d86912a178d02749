# Two commands: `make run` and `make test`. Both install what is missing first:
# Debian packages (apt-get; sudo when not root) and the virtualenv in .venv/.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
ARGS ?=

# What the service needs on the host: PostgreSQL for its private cluster, libvirt and
# qemu-img for compute, a compiler and headers to build libvirt-python, genisoimage for
# config drives; QEMU, the libvirt daemon and tini to run real guests (host-setup); and
# busybox-static for the demo guest's initramfs (its kernel is apt-get downloaded once);
# mmdebstrap and e2fsprogs (mkfs.ext4 -d) for the Debian cloud image; iproute2, nftables and
# dnsmasq-base for the data plane (namespaces, routers, security groups, DHCP);
# novnc for the page `openstack console url show` opens.
DEBS := postgresql qemu-utils libvirt-dev libvirt-daemon libvirt-clients pkg-config gcc \
        python3-dev python3-venv genisoimage jq curl \
        qemu-system-x86 libvirt-daemon-system libvirt-daemon-driver-qemu dnsmasq-base iptables \
        tini busybox-static cpio novnc mmdebstrap e2fsprogs iproute2 nftables
# Only the tests need a broker on this machine (they start their own, in a temp dir); a split
# deployment installs rabbitmq-server on the host that runs it. systemd: the unit is tested
# under a real systemd in namespaces of its own (it need not be PID 1). ssh: the README's
# guests block logs into a guest. lvm2 and thin-provisioning-tools: the lvm-thin volume
# backend's tests (the default file backend needs neither). chromium: the dashboard's browser
# tests (Playwright drives it through executable_path). haproxy: the load balancer in front of
# the active-active nodes (examples/haproxy.cfg, tests/e2e/test_active_active.py).
TEST_DEBS := rabbitmq-server systemd openssh-client lvm2 thin-provisioning-tools chromium haproxy

.PHONY: run test deps test-deps venv host-setup guest-image cloud-image bench bench-peer conformance clean help

help:
	@echo "make run    install what is missing, build the demo guest, then start nova-async (ARGS='--listen 0.0.0.0:8774 …')"
	@echo "make test   install what tests need, then run the whole suite"
	@echo "make host-setup / make guest-image   start libvirt and probe KVM / build the demo guest"
	@echo "make cloud-image   build the Debian 12 cloud image (cloud-init, ssh; user debian) once"
	@echo "make conformance   run Placement's gabbi files and Tempest's API tests against a fresh service (slow)"
	@echo "make bench-peer    the same boot burst against nova-async and upstream Nova 34 + Placement 16 (ARGS='--servers 200 --hosts 20')"

# $(call apt_install,PACKAGES): apt-get install those of PACKAGES that are missing.
define apt_install
	@missing=$$(for p in $(1); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "Installing Debian packages:" $$missing; \
	    $(SUDO) apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call apt_install,$(DEBS))

test-deps: deps $(VENV)/.site-hooks
	$(call apt_install,$(TEST_DEBS))

# The example hook plugins (examples/site_hooks), which the hook tests load through their
# entry points as a site's would be. Editable, so their code is read from the checkout:
# installed again only when their pyproject (the entry points) changes.
$(VENV)/.site-hooks: examples/site_hooks/pyproject.toml | $(BIN)/nova-async
	$(BIN)/pip install -q --no-deps -e examples/site_hooks
	@touch $@

$(BIN)/nova-async: pyproject.toml | deps
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

venv: $(BIN)/nova-async

# Idempotent: starts virtlogd/libvirtd when they are not running, fixes /dev/kvm, probes KVM.
host-setup: venv
	$(BIN)/nova-async host-setup $(ARGS)

# The demo guest (kernel + busybox initramfs), built once into /var/cache/nova-async/guest-image
# (root) or ~/.cache/nova-async/guest-image, outside any checkout so every clone reuses it.
guest-image: venv
	$(BIN)/nova-async guest-image

# The Debian 12 cloud image (cloud-init, openssh-server; login user debian with the server's
# keypair), built once with mmdebstrap (as root: sudo when not) into
# /var/cache/nova-async/cloud-image, outside any checkout; a rebuild happens only when its
# recipe changes. About 3-4 minutes the first time, then nothing.
cloud-image: venv
	$(SUDO) $(BIN)/nova-async cloud-image

# A fresh database registers the demo guest and the cloud image as images on its first
# start, so they are built first; without them (no Debian mirror, say) the service still
# starts, with nothing (or less) to boot.
run: venv host-setup
	@$(BIN)/nova-async guest-image || echo "make run: no demo guest (see above); starting without it"
	@$(SUDO) $(BIN)/nova-async cloud-image || echo "make run: no cloud image (see above); starting without it"
	@echo "Starting nova-async (Ctrl-C stops it). Once ready it prints its dashboard URL (a browser, user admin); the README shows curl and openstack."
	$(BIN)/nova-async serve $(ARGS)

# Tests run in parallel workers (pytest-xdist), each with its own PostgreSQL cluster: most of
# them wait on PostgreSQL, libvirt, a guest or a client process, so more workers than cores
# keep both cores busy. A worker gets its next test, or xdist_group (tests sharing one
# RabbitMQ, or upstream Placement's virtualenv), when it has two left (--dist loadgroup): by
# default xdist hands each worker a quarter of its share up front, in collection order, and
# one worker got every e2e test while the others were done in two minutes.
# PYTHONDONTWRITEBYTECODE, set in some environments, would make every `nova-async serve` a
# test starts compile the package again; empty, it is off.
# --durations: every run (CI's too) ends with its twenty slowest tests, where the time goes.
# --no-loadscope-reorder: keep the order tests/conftest.py gives (tests marked `long` first).
# Otherwise xdist queues the xdist_groups with the most tests first, and the longest test (a
# README block booting three Debian guests) started 200 s into the run.
TEST_WORKERS ?= 4
test: test-deps venv host-setup cloud-image
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadgroup \
		--no-loadscope-reorder --durations=20 $(PYTEST_ARGS)

# Numbers, not verdicts: each script prints its results beside a peer measured in the same run.
bench: test-deps venv host-setup guest-image
	$(BIN)/python bench/boot_rate.py
	$(BIN)/python bench/bus.py
	$(BIN)/python bench/guest_boot.py
	$(BIN)/python bench/volumes.py
	$(BIN)/python bench/event_stream.py

# Upstream Nova 34 and Placement 16 against nova-async: the same concurrent boots, same run.
# Upstream is pip-installed once into its own virtualenv under /var/cache/nova-async/bench-peer
# and runs on a private MariaDB and RabbitMQ (Debian's; all state in a temp dir, stopped at
# the end) with Nova's fake virt driver. Minutes, and ~2 GiB more at 4 hosts: not in `make bench`.
PEER_DEBS := mariadb-server rabbitmq-server
bench-peer: venv
	$(call apt_install,$(PEER_DEBS))
	$(BIN)/python bench/nova_vs_upstream.py $(ARGS)

# OpenStack's own suites, run as their projects run them, against a fresh service: upstream
# Placement's gabbi files and Tempest's API tests. Slow, so not part of `make test`; each
# behaviour a failing test revealed has a focused test of its own there. Each script installs
# its suite into a virtualenv of its own (once, under /var/cache/nova-async/conformance),
# starts nova-async on a fresh state dir and prints passed/failed/skipped last.
# A suite with failures still lets the next one run ('-'). Then the long active-active run:
# three nodes behind HAProxy, 200 boots with actions and deletes, one node SIGKILLed early, mid
# and late (the short variant is in `make test`); -rA prints each run's kill and end states.
conformance: test-deps venv host-setup guest-image
	-$(BIN)/python conformance/placement_gabbi.py
	-$(BIN)/python conformance/tempest_suites.py
	-NOVA_ASYNC_ACTIVE_ACTIVE=long $(BIN)/python -m pytest -q -p no:cacheprovider -rA \
		tests/e2e/test_active_active.py

# Install as a systemd service: the code in its own virtualenv under $(PREFIX), the units in
# $(UNITDIR), an example config in $(CONFDIR) unless one is there. DESTDIR stages it all
# under another root for packaging (then no Debian packages are installed and systemd is not
# told); a staged virtualenv keeps its staged paths, so run it from there or rebuild it.
PREFIX ?= /opt/nova-async
UNITDIR ?= /etc/systemd/system
CONFDIR ?= /etc/nova-async
UNITS := nova-async.service nova-async-control.service nova-async-compute@.service
.PHONY: install install-code install-files

install: install-code install-files
	@# What `make run` does first, for the installed service: the demo guest it registers.
	@if [ -z "$(DESTDIR)" ]; then $(PREFIX)/.venv/bin/nova-async guest-image \
	    || echo "make install: no demo guest (see above); the service starts without it"; fi
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; \
	    echo "next: systemctl enable --now nova-async"; fi

# The code, in its own virtualenv under $(PREFIX).
install-code:
	@if [ -z "$(DESTDIR)" ]; then $(MAKE) --no-print-directory deps; fi
	$(PYTHON) -m venv $(DESTDIR)$(PREFIX)/.venv
	@# Built from a copy, so the checkout gets no build/ directory; sql/ is not package
	@# data, so it goes where nova_async looks for it when installed (nova_async/sql).
	@set -e; src=$$(mktemp -d); trap 'rm -rf "$$src"' EXIT; \
	tar --exclude=__pycache__ -cf - pyproject.toml README.md nova_async | tar -xf - -C "$$src"; \
	$(DESTDIR)$(PREFIX)/.venv/bin/pip install -q "$$src"; \
	pkg=$$($(DESTDIR)$(PREFIX)/.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/nova_async; \
	rm -rf "$$pkg/sql"; cp -r sql "$$pkg/sql"
	install -D -m 0644 README.md $(DESTDIR)$(PREFIX)/README.md

# The units, and the example config unless one is there: an upgrade keeps the operator's.
install-files:
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(CONFDIR)
	@for unit in $(UNITS); do \
	    sed -e 's|/opt/nova-async|$(PREFIX)|g' -e 's|/etc/nova-async|$(CONFDIR)|g' systemd/$$unit \
	        > $(DESTDIR)$(UNITDIR)/$$unit && chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit; \
	    echo "installed $(DESTDIR)$(UNITDIR)/$$unit"; done
	@if [ -e $(DESTDIR)$(CONFDIR)/nova-async.toml ]; then \
	    echo "kept $(DESTDIR)$(CONFDIR)/nova-async.toml"; \
	else install -m 0640 systemd/nova-async.toml $(DESTDIR)$(CONFDIR)/nova-async.toml && \
	    echo "installed $(DESTDIR)$(CONFDIR)/nova-async.toml"; fi

clean:
	rm -rf $(VENV) *.egg-info
