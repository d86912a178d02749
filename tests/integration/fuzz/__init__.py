"""Hostile input against every route of every API on the one port: random and malformed
requests (hypothesis) and fixed regression cases, none of which may get a 5xx or a dropped
connection."""
