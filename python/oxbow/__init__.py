"""Oxbow's Python client: tables of an oxbowd server or cluster over Arrow Flight, with
pyarrow only (docs/python.md)."""

from oxbow._follow import Batch, Follow
from oxbow.client import Client, connect
from oxbow.errors import (AlreadyExists, Cancelled, Internal, InvalidArgument, NotFound,
                          NotLeader, OutOfRange, OxbowError, PermissionDenied,
                          ResourceExhausted, TableNotFound, TimedOut, Unauthenticated,
                          Unavailable, Unimplemented)
from oxbow.table import OffsetRange, Snapshot, Table

__all__ = [
    "AlreadyExists", "Batch", "Cancelled", "Client", "Follow", "Internal", "InvalidArgument",
    "NotFound", "NotLeader", "OffsetRange", "OutOfRange", "OxbowError", "PermissionDenied",
    "ResourceExhausted", "Snapshot", "Table", "TableNotFound", "TimedOut", "Unauthenticated",
    "Unavailable", "Unimplemented", "connect",
]
