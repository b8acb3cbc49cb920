"""The JSON that oxbowd reads: DoGet tickets and CMD descriptors (docs/api.md "Reading:
DoGet", "Union read", "Primary-key tables"), and the app_metadata it answers with."""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from typing import Any, Union

import pyarrow.flight as fl

# Where a read starts in a bucket: "earliest", "latest", an offset, or an aware datetime (the
# first batch the server appended at or after it).
Start = Union[str, int, datetime.datetime]
# One start for every bucket, or one per bucket (buckets left out start at "earliest").
Starts = Union[Start, Mapping[int, Start]]
# An exclusive end offset for every bucket, or one per bucket (left out: the log's end).
Ends = Union[int, Mapping[int, int]]
# A union read's row filter: (column, op, value) triples, all of which a row must match.
Filter = Sequence[tuple[str, str, Any]]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def start_value(start: Start) -> str | int | dict:
    """A ticket's "from" for `start`."""
    if start in ("earliest", "latest"):
        return start
    if isinstance(start, datetime.datetime):
        if start.tzinfo is None:
            raise ValueError(f"start {start} has no time zone: use an aware datetime, "
                             "e.g. datetime.now(timezone.utc)")
        return {"timestamp_ms": (start - _EPOCH) // datetime.timedelta(milliseconds=1)}
    if isinstance(start, int) and not isinstance(start, bool):
        if start < 0:
            raise ValueError(f"start offset {start} is negative")
        return start
    raise TypeError(f"a start is 'earliest', 'latest', an offset or an aware datetime, "
                    f"not {start!r}")


def for_bucket(value: Any, bucket: int) -> Any:
    """The value of a per-bucket argument (a mapping bucket -> value, or one value for all)
    for `bucket`; None when a mapping leaves it out."""
    return value.get(bucket) if isinstance(value, Mapping) else value


def log_ticket(table: str, bucket: int, start: Start | None = None, end: int | None = None,
               columns: Sequence[str] | None = None, follow: bool = False) -> fl.Ticket:
    """A read of one bucket's log (a primary-key table's changelog)."""
    ticket: dict[str, Any] = {"table": table, "bucket": bucket}
    if start is not None:
        ticket["from"] = start_value(start)
    if end is not None:
        ticket["to"] = end
    if columns is not None:
        ticket["columns"] = list(columns)
    if follow:
        ticket["follow"] = True
    return _ticket(ticket)


def union_ticket(table: str, columns: Sequence[str] | None, limit: int | None,
                 row_filter: Filter | None) -> fl.Ticket:
    """A union read: the lake's snapshot, then each bucket's log after it."""
    ticket: dict[str, Any] = {"table": table, "union": True}
    if columns is not None:
        ticket["columns"] = list(columns)
    if limit is not None:
        ticket["limit"] = limit
    if row_filter is not None:
        ticket["filter"] = [{"column": c, "op": op, "value": v} for c, op, v in row_filter]
    return _ticket(ticket)


def snapshot_ticket(table: str, columns: Sequence[str] | None, bucket: int | None) -> fl.Ticket:
    """The current rows of a primary-key table (of one bucket, or of all)."""
    ticket: dict[str, Any] = {"table": table, "snapshot": True}
    if columns is not None:
        ticket["columns"] = list(columns)
    if bucket is not None:
        ticket["bucket"] = bucket
    return _ticket(ticket)


def command(table: str, op: str, **fields: Any) -> fl.FlightDescriptor:
    """A CMD descriptor: {"table", "op"} and the fields that are not None."""
    body = {"table": table, "op": op, **{k: v for k, v in fields.items() if v is not None}}
    return fl.FlightDescriptor.for_command(json.dumps(body))


def path(table: str) -> fl.FlightDescriptor:
    """The PATH descriptor [namespace, table]."""
    namespace, _, name = table.partition(".")
    return fl.FlightDescriptor.for_path(namespace, name)


def metadata(raw: Any) -> dict:
    """A message's app_metadata (a pyarrow Buffer, or None when it has none) as JSON."""
    return json.loads(raw.to_pybytes()) if raw is not None and raw.size else {}


def _ticket(body: dict) -> fl.Ticket:
    return fl.Ticket(json.dumps(body).encode())
