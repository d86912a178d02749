"""The placement role."""
