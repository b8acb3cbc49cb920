"""Three independent readers of an Iceberg table given only its metadata.json: pyiceberg
(`StaticTable`), DuckDB (`iceberg_scan`, the official signed extensions shipped in PyPI wheels)
and Apache Spark (`spark.read.format("iceberg").load(...)` with the Iceberg Spark runtime).

`check_readers(metadata_location, expected, spark)` asserts that each of them returns exactly
the expected rows, value for value. Any lake test can call it (log tables, primary-key tables).
For a lake on S3, `duckdb_use_s3` points DuckDB at the server and `check_reader` checks one
reader's table (tests/s3/test_s3_lake.py).
docs/lake-testing.md says how the readers are installed and what each one's Arrow types are.
"""

from __future__ import annotations

import functools
import pathlib
import struct

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg import types as ice
from pyiceberg.table import StaticTable

from oxbowtest.lake import local_path


# --- the readers ------------------------------------------------------------------------------


def pyiceberg_rows(metadata_location: str) -> pa.Table:
    return StaticTable.from_metadata(metadata_location).scan().to_arrow()


def duckdb_extension(package: str, name: str) -> pathlib.Path:
    """The extension file a `duckdb-extension-<name>` wheel ships for the installed duckdb.
    The wheel's version pins duckdb's (tests/requirements.txt): a mismatch is a setup error."""
    import importlib

    module = importlib.import_module(package)
    path = (pathlib.Path(module.__file__).parent / "extensions" / f"v{duckdb.__version__}" /
            f"{name}.duckdb_extension")
    if not path.is_file():
        raise RuntimeError(f"{path} not found: the {package} wheel must match duckdb "
                           f"{duckdb.__version__} (run scripts/setup.sh)")
    return path


@functools.cache
def duckdb_connection() -> duckdb.DuckDBPyConnection:
    """One in-memory DuckDB with avro and then iceberg loaded from the wheels' files, nothing
    installed or loaded behind our back, signatures checked, session time zone UTC."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False,
                                 "allow_unsigned_extensions": False})
    for package, name in [("duckdb_extension_avro", "avro"),
                          ("duckdb_extension_iceberg", "iceberg")]:
        con.execute(f"LOAD '{duckdb_extension(package, name)}'")
    con.execute("SET TimeZone = 'UTC'")
    return con


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def duckdb_use_s3(bucket: str, endpoint: str, region: str, access_key_id: str,
                  secret_access_key: str) -> None:
    """Loads httpfs (from the duckdb-extension-httpfs wheel, like the others) into the DuckDB of
    duckdb_connection() and gives it an S3 secret for s3://<bucket>: path-style requests to
    `endpoint` (http:// or https://), signed with the key for `region`."""
    con = duckdb_connection()
    con.execute(f"LOAD '{duckdb_extension('duckdb_extension_httpfs', 'httpfs')}'")
    use_ssl, host = ("true", endpoint.removeprefix("https://")) if endpoint.startswith(
        "https://") else ("false", endpoint.removeprefix("http://"))
    con.execute(
        f"CREATE OR REPLACE SECRET oxbow_s3 (TYPE s3, PROVIDER config, "
        f"KEY_ID {_sql_string(access_key_id)}, SECRET {_sql_string(secret_access_key)}, "
        f"REGION {_sql_string(region)}, ENDPOINT {_sql_string(host)}, URL_STYLE 'path', "
        f"USE_SSL {use_ssl}, SCOPE {_sql_string(f's3://{bucket}')})")


def duckdb_rows(metadata_location: str) -> pa.Table:
    """DuckDB's iceberg_scan of a local metadata file, or of an s3:// one (duckdb_use_s3)."""
    path = (metadata_location if metadata_location.startswith("s3://")
            else str(local_path(metadata_location)))
    return duckdb_connection().sql(
        f"SELECT * FROM iceberg_scan({_sql_string(path)})").to_arrow_table()


def spark_rows(spark, metadata_location: str) -> pa.Table:
    """Spark's rows as Arrow (Spark's own Arrow conversion, session time zone UTC)."""
    return spark_frame_rows(spark.read.format("iceberg").load(str(local_path(metadata_location))))


def spark_frame_rows(frame) -> pa.Table:
    """A Spark DataFrame's rows as Arrow."""
    batches = frame._collect_as_arrow()
    schema = batches[0].schema if batches else None
    if schema is None:  # no rows: the schema Spark would give them
        from pyspark.sql.pandas.types import to_arrow_schema

        schema = to_arrow_schema(frame.schema)
    return pa.Table.from_batches(batches, schema=schema)


# --- what each reader's Arrow types are --------------------------------------------------------


def expected_arrow_type(reader: str, t: ice.IcebergType) -> pa.DataType:
    """The Arrow type `reader` returns for an Iceberg primitive type. Differences from
    pyiceberg's: Spark has no fixed(n) (binary) and DuckDB maps fixed(n) to BLOB."""
    if isinstance(t, ice.BooleanType):
        return pa.bool_()
    if isinstance(t, ice.IntegerType):
        return pa.int32()
    if isinstance(t, ice.LongType):
        return pa.int64()
    if isinstance(t, ice.FloatType):
        return pa.float32()
    if isinstance(t, ice.DoubleType):
        return pa.float64()
    if isinstance(t, ice.StringType):
        return pa.string()
    if isinstance(t, ice.BinaryType):
        return pa.binary()
    if isinstance(t, ice.FixedType):
        return pa.binary(len(t)) if reader == "pyiceberg" else pa.binary()
    if isinstance(t, ice.DateType):
        return pa.date32()
    if isinstance(t, ice.TimestamptzType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(t, ice.TimestampType):
        return pa.timestamp("us")
    if isinstance(t, ice.DecimalType):
        return pa.decimal128(t.precision, t.scale)
    raise AssertionError(f"no expected Arrow type for {t}")


# --- comparison -------------------------------------------------------------------------------

_CANONICAL_NAN64 = struct.unpack("<q", struct.pack("<d", float("nan")))[0]
_CANONICAL_NAN32 = struct.unpack("<i", struct.pack("<f", float("nan")))[0]


def comparable(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A column as values that compare exactly across readers: timestamps as their int64
    microseconds (years past 9999 have no Python form; the zone is checked by type), floats as
    their bits with every NaN one NaN (so -0.0 != 0.0 and NaN == NaN), fixed-size binary as
    binary; everything else as it is."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_timestamp(array.type):
        assert array.type.unit == "us", array.type
        return array.view(pa.int64())
    if pa.types.is_float64(array.type) or pa.types.is_float32(array.type):
        bits_type, nan = ((pa.int64(), _CANONICAL_NAN64) if pa.types.is_float64(array.type)
                          else (pa.int32(), _CANONICAL_NAN32))
        return pc.if_else(pc.is_nan(array), pa.scalar(nan, bits_type), array.view(bits_type))
    if pa.types.is_fixed_size_binary(array.type):
        return array.cast(pa.binary())
    return array


def _sorted(table: pa.Table, key: list[str]) -> pa.Table:
    return table.sort_by([(k, "ascending") for k in key])


def assert_rows_equal(reader: str, got: pa.Table, expected: pa.Table, key: list[str]) -> None:
    """`got` holds exactly `expected`'s rows: same count, each key once, and for every
    column of `expected` the same values (compared with `comparable`) in key order."""
    assert got.num_rows == expected.num_rows, (
        f"{reader}: {got.num_rows} rows, expected {expected.num_rows}")
    keys = got.group_by(key).aggregate([])
    assert keys.num_rows == got.num_rows, (
        f"{reader}: {got.num_rows - keys.num_rows} rows repeat a key {key}")
    got, expected = _sorted(got, key), _sorted(expected, key)
    for name in expected.column_names:
        have = comparable(got.column(name))
        want = comparable(expected.column(name))
        if not have.equals(want):
            diffs = [i for i in range(len(want)) if not have[i].equals(want[i])][:5]
            rows = [{k: got.column(k)[i].as_py() for k in key} for i in diffs]
            raise AssertionError(
                f"{reader}: column {name} differs at keys {rows}: got "
                f"{[have[i] for i in diffs]}, expected {[want[i] for i in diffs]}")


def lake_readers(spark) -> dict:
    """Reader name -> function(metadata_location) -> rows: pyiceberg, DuckDB and, when given a
    session, Spark."""
    readers = {"pyiceberg": pyiceberg_rows, "duckdb": duckdb_rows}
    if spark is not None:
        readers["spark"] = functools.partial(spark_rows, spark)
    return readers


def check_readers(metadata_location: str, expected: pa.Table | list[dict], spark,
                  key: list[str] | None = None) -> dict[str, pa.Table]:
    """pyiceberg, DuckDB and Spark (skipped when `spark` is None: OXBOW_SKIP_SPARK=1) each read
    the table of `metadata_location` and return exactly `expected`'s rows.

    `expected` is a table or a list of row dicts; its columns are the ones compared (a subset of
    the Iceberg schema's, e.g. without __timestamp), values in pyiceberg's Arrow types (fixed(n)
    as binary(n) or binary). Each reader must return every column of the Iceberg schema, in
    schema order, in the Arrow type `expected_arrow_type` names. `key` (default: __bucket and
    __offset, a log table's row identity) orders the rows and must be unique.
    Returns each reader's table."""
    schema = StaticTable.from_metadata(metadata_location).schema()
    names = [f.name for f in schema.fields]
    if isinstance(expected, list):
        arrow_schema = schema.as_arrow()
        columns = list(expected[0]) if expected else names
        expected = pa.Table.from_pylist(
            expected, schema=pa.schema([arrow_schema.field(c) for c in columns]))
    readers = lake_readers(spark)
    results = {}
    for reader, read in readers.items():
        results[reader] = read(metadata_location)
        check_reader(reader, results[reader], schema, expected, key)
    return results


def check_reader(reader: str, got: pa.Table, schema, expected: pa.Table,
                 key: list[str] | None = None) -> None:
    """`reader`'s table `got` of an Iceberg table of `schema` has every column of the schema, in
    schema order and in the Arrow type `expected_arrow_type` names, and exactly `expected`'s
    rows (see check_readers)."""
    key = key or ["__bucket", "__offset"]
    assert set(key) <= set(expected.column_names), f"key {key} not in {expected.column_names}"
    names = [f.name for f in schema.fields]
    assert got.column_names == names, f"{reader}: columns {got.column_names}, schema {names}"
    for field in schema.fields:
        want = expected_arrow_type(reader, field.field_type)
        have = got.schema.field(field.name).type
        assert have == want, f"{reader}: column {field.name} ({field.field_type}) is {have}"
    assert_rows_equal(reader, got, expected, key)
