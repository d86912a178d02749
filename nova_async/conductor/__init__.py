"""The conductor role."""
