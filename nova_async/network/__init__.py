"""The network role."""
