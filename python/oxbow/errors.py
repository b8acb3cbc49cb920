"""Typed exceptions for the gRPC status codes oxbowd answers with (docs/api.md "Errors").

pyarrow raises a different class per code, and for several codes only a generic one
(`ArrowInvalid` for INVALID_ARGUMENT, OUT_OF_RANGE and RESOURCE_EXHAUSTED alike), with the
server's message wrapped in its own text. `from_arrow` turns such an exception back into the
code and the server's message.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.flight as fl


class OxbowError(Exception):
    """A failed call. `code` is the gRPC status code name (e.g. "NOT_FOUND"), or None when the
    error did not come from the server; `message` is the server's message, as sent."""

    code: str | None = None

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidArgument(OxbowError):
    """INVALID_ARGUMENT: a malformed request, a schema mismatch, a value the table refuses."""

    code = "INVALID_ARGUMENT"


class NotFound(OxbowError):
    """NOT_FOUND."""

    code = "NOT_FOUND"


class TableNotFound(NotFound):
    """NOT_FOUND for a table that does not exist ("table 'ns.t' does not exist")."""


class AlreadyExists(OxbowError):
    """ALREADY_EXISTS: create_table of an existing table."""

    code = "ALREADY_EXISTS"


class OutOfRange(OxbowError):
    """OUT_OF_RANGE: a read offset outside what the table holds (the message gives the range)."""

    code = "OUT_OF_RANGE"


class ResourceExhausted(OxbowError):
    """RESOURCE_EXHAUSTED: disk full, or a user name locked out after wrong passwords."""

    code = "RESOURCE_EXHAUSTED"


class Unimplemented(OxbowError):
    """UNIMPLEMENTED: an action the server does not know."""

    code = "UNIMPLEMENTED"


class Unauthenticated(OxbowError):
    """UNAUTHENTICATED: no login, a wrong password, an unknown or expired token."""

    code = "UNAUTHENTICATED"


class PermissionDenied(OxbowError):
    """PERMISSION_DENIED: the user has no grant for this access to this table."""

    code = "PERMISSION_DENIED"


class Unavailable(OxbowError):
    """UNAVAILABLE: the server cannot be reached, or cannot serve this now (e.g. too few
    in-sync replicas in a cluster)."""

    code = "UNAVAILABLE"


class NotLeader(Unavailable):
    """UNAVAILABLE from a cluster server that does not lead the bucket: `location` is the
    leader's Flight URI ("" while the bucket has no leader)."""

    def __init__(self, message: str, info: dict):
        super().__init__(message)
        self.table: str = info.get("table", "")
        self.bucket: int = info.get("bucket", 0)
        self.leader: int = info.get("leader", -1)
        self.location: str = info.get("location", "")
        self.leader_epoch: int = info.get("leader_epoch", 0)


class Cancelled(OxbowError):
    """CANCELLED: the call was cancelled, or a stream ended because its table was altered."""

    code = "CANCELLED"


class TimedOut(OxbowError):
    """DEADLINE_EXCEEDED: the call passed its timeout."""

    code = "DEADLINE_EXCEEDED"


class Internal(OxbowError):
    """INTERNAL: an I/O error on the server, or damaged log data (the message names it)."""

    code = "INTERNAL"


# pyarrow's wording of each code, as it appears in its exception text.
_PHRASES = [
    ("invalid argument", InvalidArgument),
    ("not found", NotFound),
    ("already exists", AlreadyExists),
    ("out-of-range", OutOfRange),
    ("resource exhausted", ResourceExhausted),
    ("unimplemented", Unimplemented),
    ("unauthenticated", Unauthenticated),
    ("unauthorized", PermissionDenied),
    ("unavailable", Unavailable),
    ("cancelled", Cancelled),
    ("timed out", TimedOut),
    ("internal", Internal),
]

# Where the code has a class of its own, the class decides.
_CLASSES = [
    (fl.FlightUnauthenticatedError, Unauthenticated),
    (fl.FlightUnauthorizedError, PermissionDenied),
    (fl.FlightUnavailableError, Unavailable),
    (fl.FlightCancelledError, Cancelled),
    (fl.FlightTimedOutError, TimedOut),
    (fl.FlightInternalError, Internal),
]

# "Flight returned not found error, with message: <message>. gRPC client debug context: ..."
_WRAPPED = re.compile(r"(?:Flight|gRPC) (?P<phrase>[^,]*), with message: (?P<message>.*?)"
                      r"(?:\. gRPC client debug context: .*)?$", re.DOTALL)
_TABLE_MISSING = re.compile(r"^table '.*' does not exist")


def from_arrow(error: Exception) -> OxbowError:
    """The typed exception for a pyarrow (Flight) exception, keeping the server's message.
    (A status pyarrow has no class for, e.g. UNAUTHENTICATED from GetSchema, comes as a plain
    OSError.)"""
    text = str(error)
    wrapped = _WRAPPED.search(text)
    if wrapped is None:  # raised by pyarrow itself, e.g. a batch of another schema
        kind = next((k for c, k in _CLASSES if isinstance(error, c)), None)
        if kind is None:
            kind = InvalidArgument if isinstance(error, pa.ArrowInvalid) else OxbowError
        return kind(text)
    message = wrapped.group("message")
    kind = next((k for c, k in _CLASSES if isinstance(error, c)), None)
    if kind is None:
        phrase = wrapped.group("phrase")
        kind = next((k for p, k in _PHRASES if p in phrase), OxbowError)
    if kind is Unavailable:
        leader = _not_leader(message)
        if leader is not None:
            return NotLeader(message, leader)
    if kind is NotFound and _TABLE_MISSING.match(message):
        return TableNotFound(message)
    return kind(message) if kind is not OxbowError else OxbowError(message, "UNKNOWN")


def _not_leader(message: str) -> dict | None:
    """The JSON of a not_leader answer: {"error": "not_leader", "table", "bucket", "leader",
    "location", "leader_epoch"}, or None for any other message."""
    start = message.find("{")
    if start < 0:
        return None
    try:
        found, _ = json.JSONDecoder().raw_decode(message[start:])
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) and found.get("error") == "not_leader" else None


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Re-raises pyarrow exceptions of the block as their typed OxbowError."""
    try:
        yield
    except (pa.ArrowException, OSError) as e:
        raise from_arrow(e) from e
