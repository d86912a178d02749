"""The image role."""
