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
# busybox-static for the demo guest's initramfs (its kernel is apt-get downloaded once).
DEBS := postgresql qemu-utils libvirt-dev libvirt-daemon libvirt-clients pkg-config gcc \
        python3-dev python3-venv genisoimage jq curl \
        qemu-system-x86 libvirt-daemon-system libvirt-daemon-driver-qemu dnsmasq-base iptables \
        tini busybox-static cpio

.PHONY: run test deps venv host-setup guest-image bench clean help

help:
	@echo "make run    install what is missing, build the demo guest, then start nova-async (ARGS='--listen 0.0.0.0:8774 …')"
	@echo "make test   install what tests need, then run the whole suite"
	@echo "make host-setup / make guest-image   start libvirt and probe KVM / build the demo guest"

deps:
	@missing=$$(for p in $(DEBS); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "Installing Debian packages:" $$missing; \
	    $(SUDO) apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

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

# A fresh database registers the demo guest as images on its first start, so it is built
# first; without it (no Debian mirror, say) the service still starts, with nothing to boot.
run: venv host-setup
	@$(BIN)/nova-async guest-image || echo "make run: no demo guest (see above); starting without it"
	@echo "Starting nova-async (Ctrl-C stops it). The README shows how to reach it with curl and openstack."
	$(BIN)/nova-async serve $(ARGS)

test: venv host-setup
	$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# Numbers, not verdicts: each script prints its results beside a peer measured in the same run.
bench: venv host-setup guest-image
	$(BIN)/python bench/boot_rate.py
	$(BIN)/python bench/guest_boot.py

clean:
	rm -rf $(VENV) *.egg-info
