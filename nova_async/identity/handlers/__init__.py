"""Keystone v3's HTTP handlers, one module per resource; routes.py maps URLs to them."""
