"""The identity role."""
