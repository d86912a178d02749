"""Neutron v2.0's HTTP handlers, one module per resource; routes.py maps URLs to them."""
