"""The compute role."""
