"""Table: writes (DoPut), reads (DoGet), lookups (DoExchange) and the table's own actions."""

from __future__ import annotations

import collections
import itertools
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.flight as fl

from oxbow import _tickets
from oxbow._connection import Connections
from oxbow._convert import Data, conform, to_reader
from oxbow._follow import Follow
from oxbow._tickets import Ends, Filter, Starts, for_bucket
from oxbow.errors import Unavailable, translated

# Batches a put sends ahead of their acknowledgements (each is acknowledged once durable).
PUT_WINDOW = 8


@dataclass(frozen=True)
class OffsetRange:
    """Rows a write appended to one bucket: offsets base_offset .. base_offset + rows - 1 (for
    a primary-key table, changelog records)."""

    bucket: int
    base_offset: int
    rows: int

    @property
    def next_offset(self) -> int:
        """The offset after the range."""
        return self.base_offset + self.rows


@dataclass(frozen=True)
class Snapshot:
    """A primary-key table's current rows, and per bucket the changelog offset they are
    consistent with: follow(from_=snapshot.offsets) continues them with no gap and no
    duplicate."""

    data: pa.Table
    offsets: dict[int, int]


class Table:
    """One table of a Client (client.table(name)). Its methods may be called from several
    threads at once."""

    def __init__(self, name: str, connections: Connections,
                 action: Callable[[str, Mapping[str, Any]], dict]):
        self.name = name
        self._connections = connections
        self._action = action
        self._schema: pa.Schema | None = None  # the schema writes are converted to

    def __repr__(self) -> str:
        return f"Table({self.name!r})"

    # --- the table's actions ---------------------------------------------------------------

    @property
    def schema(self) -> pa.Schema:
        """The table's current schema (GetSchema); column docs are each field's metadata
        entry "doc"."""
        def run(client: fl.FlightClient, options: fl.FlightCallOptions) -> pa.Schema:
            return client.get_schema(_tickets.path(self.name), options=options).schema

        self._schema = self._connections.call(run)
        return self._schema

    def describe(self) -> dict:
        """describe_table: the descriptor, each bucket's offsets and the lake's state."""
        return self._action("describe_table", {"table": self.name})

    def alter(self, *changes: Mapping[str, Any]) -> dict:
        """alter_table with these changes, applied in order, all or none (docs/api.md
        "alter_table"): e.g. alter({"op": "add_column", "name": "note", "type": pa.string()}).
        A "type" may be a pyarrow DataType. Returns the new descriptor."""
        body = [{k: str(v) if isinstance(v, pa.DataType) else v for k, v in c.items()}
                for c in changes]
        result = self._action("alter_table", {"table": self.name, "changes": body})
        self._schema = None
        return result

    # --- writes ----------------------------------------------------------------------------

    def append(self, data: Data) -> list[OffsetRange]:
        """Appends `data` (a pyarrow Table, RecordBatch or RecordBatchReader, a dict of
        columns, a pandas DataFrame or a polars one) and returns the offsets of each
        acknowledged batch, in order. Each of its record batches is one batch on the server
        (all or nothing per bucket); columns are converted to the table's types and order.
        On a primary-key table it upserts."""
        return self._put(_tickets.path(self.name), data, whole=True)

    def upsert(self, data: Data) -> list[OffsetRange]:
        """Upserts rows into a primary-key table: every column, or the key plus some columns
        (a partial update). Returns the changelog records appended per batch."""
        return self._put(_tickets.command(self.name, "upsert"), data, whole=False)

    def delete(self, keys: Data) -> list[OffsetRange]:
        """Deletes the rows of these keys (data of the primary-key columns) from a
        primary-key table. Returns the changelog records appended per batch."""
        return self._put(_tickets.command(self.name, "delete"), keys, whole=False)

    def _put(self, descriptor: fl.FlightDescriptor, data: Data,
             whole: bool) -> list[OffsetRange]:
        schema, batches = self._conformed(data, whole)
        pending: collections.deque[pa.RecordBatch] = collections.deque()  # sent, not acked
        ranges: list[OffsetRange] = []

        def take_ack(acks: fl.FlightMetadataReader) -> bool:
            reply = acks.read()
            if reply is None:
                return False
            pending.popleft()
            for o in json.loads(reply.to_pybytes())["offsets"]:
                ranges.append(OffsetRange(o["bucket"], o["base_offset"], o["rows"]))
            return True

        def run(client: fl.FlightClient, options: fl.FlightCallOptions) -> list[OffsetRange]:
            # After a not_leader answer this runs again on the leader: what was sent and not
            # acknowledged was refused, and goes again.
            resend = list(pending)
            pending.clear()
            writer, acks = client.do_put(descriptor, schema, options=options)
            try:
                for batch in itertools.chain(resend, batches):
                    pending.append(batch)
                    writer.write_batch(batch)
                    if len(pending) >= PUT_WINDOW and not take_ack(acks):
                        break
                writer.done_writing()
                while pending and take_ack(acks):
                    pass
            except BaseException:
                while pending and _quietly(lambda: take_ack(acks)):
                    pass  # the acks that arrived before the failure
                writer.close()  # raises the server's error, if it sent one
                raise
            writer.close()  # raises the server's error, if it sent one
            if pending:
                raise Unavailable(f"the server ended the put to '{self.name}' without "
                                  f"acknowledging its last {len(pending)} batches")
            return ranges

        return self._connections.call(run, idempotent=False, stream=True)

    def _conformed(self, data: Data, whole: bool) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        """`data` as batches to send: converted to the table's schema, asked of the server
        again when the one known might be out of date."""
        reader = to_reader(data)
        if self._schema is not None:
            schema, batches = conform(reader, self._schema, whole)
            if schema.equals(reader.schema):  # nothing to convert
                return schema, batches
        return conform(reader, self.schema, whole)

    # --- reads -----------------------------------------------------------------------------

    def read(self, columns: Sequence[str] | None = None, *, start: Starts | None = None,
             end: Ends | None = None, buckets: Sequence[int] | None = None,
             union: bool = False, limit: int | None = None,
             filter: Filter | None = None) -> pa.Table:
        """The rows of every bucket (or of `buckets`), bucket after bucket, each from `start`
        ("earliest", the default; "latest"; an offset; an aware datetime: the first batch
        appended at or after it; or a dict of these per bucket) to `end` (an exclusive offset
        or a dict of them; default: the log's end when the bucket's read starts). `columns`
        projects on the server. A primary-key table's log is its changelog (with
        `_change_type`).

        `union=True` reads the table's lake snapshot and then the log after it, each row once
        (a primary-key table: each key's current row); `limit` and `filter` (a list of
        (column, op, value), op one of < <= > >= == !=) apply to union reads only."""
        streams = self._streams(columns, start, end, buckets, union, limit, filter)
        with translated():
            return pa.concat_tables([s.read_all() for s in streams])

    def reader(self, columns: Sequence[str] | None = None, *, start: Starts | None = None,
               end: Ends | None = None, buckets: Sequence[int] | None = None,
               union: bool = False, limit: int | None = None,
               filter: Filter | None = None) -> pa.RecordBatchReader:
        """read() as a stream of record batches, for data larger than memory."""
        streams = self._streams(columns, start, end, buckets, union, limit, filter)
        first = next(streams)

        def batches() -> Iterator[pa.RecordBatch]:
            for stream in itertools.chain([first], streams):
                with translated():
                    yield from stream.to_reader()

        return pa.RecordBatchReader.from_batches(first.schema, batches())

    def _streams(self, columns: Sequence[str] | None, start: Starts | None, end: Ends | None,
                 buckets: Sequence[int] | None, union: bool, limit: int | None,
                 row_filter: Filter | None) -> Iterator[fl.FlightStreamReader]:
        """The DoGet streams of a read, opened one after another as they are asked for."""
        if union:
            if start is not None or end is not None or buckets is not None:
                raise ValueError("a union read covers every bucket from the lake's snapshot "
                                 "on: start, end and buckets do not apply")
            return iter([self._open(_tickets.union_ticket(self.name, columns, limit,
                                                          row_filter), None)])
        if limit is not None or row_filter is not None:
            raise ValueError("limit and filter apply to union reads only (union=True)")
        locations = self._locations()
        chosen = self._chosen(buckets, locations)
        return (self._open(_tickets.log_ticket(self.name, b, for_bucket(start, b),
                                               for_bucket(end, b), columns), locations[b])
                for b in chosen)

    def follow(self, from_: Starts = "earliest", columns: Sequence[str] | None = None, *,
               buckets: Sequence[int] | None = None) -> Follow:
        """Tails every bucket (or `buckets`) from `from_` (as read()'s `start`; a dict
        leaves out buckets that start at "earliest"; Follow.positions and
        Snapshot.offsets are such dicts): an iterator of Batch, each row once, in offset order
        per bucket, as rows become durable. It survives server restarts and failovers: it
        reconnects and goes on from the next offset of each bucket. Close it (or use it as a
        context manager) to stop."""
        locations = self._locations()
        chosen = self._chosen(buckets, locations)
        starts = {b: for_bucket(from_, b) for b in chosen}
        starts = {b: "earliest" if s is None else s for b, s in starts.items()}
        if "latest" in starts.values():
            # Pinned now: a reconnect must not skip rows appended in between.
            ends = {o["bucket"]: o["next_offset"] for o in self.describe()["bucket_offsets"]}
            starts = {b: ends[b] if s == "latest" else s for b, s in starts.items()}
        return Follow(self, starts, columns, locations, self._connections.retry_for)

    def lookup(self, keys: Data, columns: Sequence[str] | None = None, *,
               prefix: bool = False) -> pa.Table:
        """The current rows of these keys of a primary-key table, in the order of the keys (a
        key not found is left out). `keys` holds the primary-key columns (or, with
        `prefix`, the bucket-key columns: every row under them), as any data append()
        takes; `columns` projects."""
        schema, batches = self._conformed(keys, whole=False)
        batches = list(batches)
        descriptor = _tickets.command(self.name, "lookup",
                                      columns=list(columns) if columns is not None else None,
                                      prefix=prefix or None)

        def run(client: fl.FlightClient, options: fl.FlightCallOptions) -> pa.Table:
            writer, reader = client.do_exchange(descriptor, options=options)
            try:
                writer.begin(schema)
                found = []
                for batch in batches:  # one answer per batch of keys
                    writer.write_batch(batch)
                    found.append(reader.read_chunk().data)
                writer.done_writing()
                result = pa.Table.from_batches(found, schema=reader.schema)
            except BaseException:
                writer.close()  # raises the server's error, if it sent one
                raise
            writer.close()
            return result

        return self._connections.call(run, stream=True)

    def snapshot(self, columns: Sequence[str] | None = None, *,
                 bucket: int | None = None) -> Snapshot:
        """The current rows of a primary-key table (or of one bucket), in key order per
        bucket, as of one moment per bucket, with the changelog offsets to follow them
        from."""
        location = None
        if bucket is not None:
            locations = self._locations()
            location = locations[self._chosen([bucket], locations)[0]]
        stream = self._open(_tickets.snapshot_ticket(self.name, columns, bucket), location)
        with translated():
            first = stream.read_chunk()
            rest = stream.read_all()
        offsets = {o["bucket"]: o["next_offset"]
                   for o in _tickets.metadata(first.app_metadata)["offsets"]}
        data = pa.Table.from_batches([first.data, *rest.to_batches()], schema=stream.schema)
        return Snapshot(data, offsets)

    # --- where reads go --------------------------------------------------------------------

    def _locations(self) -> dict[int, str | None]:
        """Each bucket's server (GetFlightInfo): its leader's URI in a cluster, None on one
        server."""
        def run(client: fl.FlightClient, options: fl.FlightCallOptions) -> fl.FlightInfo:
            return client.get_flight_info(_tickets.path(self.name), options=options)

        locations = {}
        for endpoint in self._connections.call(run).endpoints:
            bucket = json.loads(endpoint.ticket.ticket)["bucket"]
            locations[bucket] = endpoint.locations[0].uri.decode() if endpoint.locations \
                else None
        return locations

    def _chosen(self, buckets: Sequence[int] | None,
                locations: dict[int, str | None]) -> list[int]:
        if buckets is None:
            return sorted(locations)
        if not buckets:
            raise ValueError("buckets is empty: name at least one, or None for every bucket")
        missing = [b for b in buckets if b not in locations]
        if missing:
            raise ValueError(f"table '{self.name}' has no bucket {missing[0]} "
                             f"(it has {len(locations)})")
        return list(buckets)

    def _open(self, ticket: fl.Ticket, location: str | None,
              stop: threading.Event | None = None,
              on_open: Callable[[fl.FlightStreamReader], None] | None = None,
              ) -> fl.FlightStreamReader:
        """A DoGet stream whose schema arrived (so the server accepted the ticket).
        `on_open` gets the stream before that, to be able to cancel it; `stop` ends the
        retries."""
        def run(client: fl.FlightClient, options: fl.FlightCallOptions) -> fl.FlightStreamReader:
            stream = client.do_get(ticket, options=options)
            if on_open is not None:
                on_open(stream)
            stream.schema  # noqa: B018 -- waits for the server's answer, or its error
            return stream

        return self._connections.call(run, location, stream=True, stop=stop)


def _quietly(step: Callable[[], bool]) -> bool:
    """step(), or False if it raised: reading what is left of a stream that failed."""
    try:
        return step()
    except (pa.ArrowException, OSError):
        return False
