"""The api role."""
