"""nova-async: OpenStack Nova's server lifecycle as one asyncio process."""

__version__ = "0.1.0"
