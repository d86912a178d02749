"""The one error hierarchy. Each error has an HTTP status and a stable machine code;
the HTTP layer maps them to each API's fault format in exactly one middleware, and the bus
carries them across roles by code."""

from __future__ import annotations


class NovaAsyncError(Exception):
    status = 500
    code = "internal_error"

    def __init__(self, message: str = "", *, code: str | None = None) -> None:
        super().__init__(message or self.__class__.__name__)
        self.message = message or self.__class__.__name__
        if code:
            self.code = code


class InvalidInput(NovaAsyncError):
    status = 400
    code = "invalid_input"


class Unauthorized(NovaAsyncError):
    status = 401
    code = "unauthorized"


class Forbidden(NovaAsyncError):
    status = 403
    code = "forbidden"


class OverQuota(NovaAsyncError):
    status = 403
    code = "over_quota"


class NotFound(NovaAsyncError):
    status = 404
    code = "not_found"


class MethodNotAllowed(NovaAsyncError):
    status = 405
    code = "method_not_allowed"
    # The methods the resource does answer, sent back in an `Allow` header (RFC 9110 asks
    # every 405 for one); empty when a method is refused only at some microversions.
    allowed: tuple[str, ...] = ()


class NotAcceptable(NovaAsyncError):
    status = 406
    code = "not_acceptable"


class Conflict(NovaAsyncError):
    status = 409
    code = "conflict"


class TooLarge(NovaAsyncError):
    status = 413
    code = "too_large"


class UnsupportedMediaType(NovaAsyncError):
    status = 415
    code = "unsupported_media_type"


class NotImplementedHere(NovaAsyncError):
    """An API call this deployment's hypervisors cannot do (Nova's 501 for a driver without it)."""

    status = 501
    code = "not_implemented"


class Unavailable(NovaAsyncError):
    status = 503
    code = "unavailable"


class DatabaseUnavailable(Unavailable):
    """The database server is not answering (gone away, restarting, refusing connections):
    raised by the pool (db/pool.py), the one place asyncpg's connection-loss errors turn
    into ours. Work that meets it is resumed once the database is back (db/health.py)."""

    code = "database_unavailable"


class NoValidHost(NovaAsyncError):
    """The scheduler found no host; the message explains which stage removed what."""

    status = 400
    code = "no_valid_host"


class SchedulingAbandoned(Conflict):
    """A scheduling decision stopped: the conductor that asked no longer holds the instance
    (it died, or gave up); whoever took it over decides it."""

    code = "scheduling_abandoned"


class BusTimeout(Unavailable):
    code = "bus_timeout"


BY_NAME: dict[str, type[NovaAsyncError]] = {
    cls.__name__: cls
    for cls in (NovaAsyncError, InvalidInput, Unauthorized, Forbidden, OverQuota, NotFound,
                MethodNotAllowed, NotAcceptable, Conflict, TooLarge, UnsupportedMediaType,
                NotImplementedHere, Unavailable, DatabaseUnavailable, NoValidHost, SchedulingAbandoned,
                BusTimeout)
}


def wire_kind(exc: NovaAsyncError) -> str:
    """The class an error crosses the bus as: its own, or its nearest ancestor the other side
    can rebuild (a HookVeto arrives as the InvalidInput it is, still a 4xx)."""
    return next(c.__name__ for c in type(exc).__mro__ if BY_NAME.get(c.__name__) is c)


def rebuild(kind: str, message: str, code: str) -> NovaAsyncError:
    """Turn an error that crossed the bus back into its class."""
    return BY_NAME.get(kind, NovaAsyncError)(message, code=code)
