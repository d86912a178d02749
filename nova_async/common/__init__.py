"""Layers every role shares: errors, logging, HTTP plumbing, request context."""
