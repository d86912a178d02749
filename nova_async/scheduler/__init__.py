"""The scheduler role."""
