"""Sample values of every column type oxbowd stores, with nulls and extremes, and batch makers."""

import datetime
import decimal

import pyarrow as pa

D = decimal.Decimal

# name -> (type, values). Each list holds a None and the type's extremes where it has them.
TYPES = {
    "bool": (pa.bool_(), [True, False, None]),
    "int8": (pa.int8(), [-128, 127, 0, -1, None]),
    "int16": (pa.int16(), [-(2**15), 2**15 - 1, 0, None]),
    "int32": (pa.int32(), [-(2**31), 2**31 - 1, 0, None]),
    "int64": (pa.int64(), [-(2**63), 2**63 - 1, 0, None]),
    "uint8": (pa.uint8(), [0, 255, 1, None]),
    "uint16": (pa.uint16(), [0, 2**16 - 1, None]),
    "uint32": (pa.uint32(), [0, 2**32 - 1, None]),
    "uint64": (pa.uint64(), [0, 2**64 - 1, 2**63, None]),
    "float": (pa.float32(), [float("nan"), float("inf"), float("-inf"), -0.0, 1.5,
                             3.4028234663852886e38, 1e-45, None]),
    "double": (pa.float64(), [float("nan"), float("inf"), float("-inf"), -0.0, 2.5,
                              1.7976931348623157e308, 5e-324, None]),
    "string": (pa.string(), ["", "héllo", "日本語 🚀", "x" * 1000, "a\x00b", None]),
    "binary": (pa.binary(), [b"", b"\x00\xff\x80", b"y" * 777, None]),
    "date32": (pa.date32(), [datetime.date(1970, 1, 1), datetime.date(1, 1, 1),
                             datetime.date(9999, 12, 31), datetime.date(1969, 12, 31), None]),
    **{f"timestamp[{unit}]": (pa.timestamp(unit), [0, -1, 1_700_000_000_123, 2**62, None])
       for unit in ["s", "ms", "us", "ns"]},
    **{f"timestamp[{unit}, tz=UTC]": (pa.timestamp(unit, tz="UTC"), [0, -(2**40), 2**50, None])
       for unit in ["s", "ms", "us", "ns"]},
    "timestamp[ns, tz=America/New_York]": (pa.timestamp("ns", tz="America/New_York"),
                                           [1, 2**62, None]),
    "decimal128(10, 2)": (pa.decimal128(10, 2), [D("-12345678.90"), D("0.01"), D("0.00"),
                                                 D("99999999.99"), None]),
    "decimal128(38, 0)": (pa.decimal128(38, 0), [D("9" * 38), D("-" + "9" * 38), D(0), D(-1),
                                                 None]),
    "decimal128(38, 10)": (pa.decimal128(38, 10), [D("1234567890123456789012345678.0123456789"),
                                                   D("-0.0000000001"), None]),
    "fixed_size_binary[4]": (pa.binary(4), [b"abcd", b"\x00\x00\x00\x00", b"\xff" * 4, None]),
    "fixed_size_binary[1]": (pa.binary(1), [b"z", b"\x00", None]),
}


# The properties of a table out of the lake. TYPES holds what only such a table takes (docs/lake.md):
# uint64, and second/millisecond timestamps beyond the microseconds the lake stores. Tables of these
# samples test the log; tests/lake covers the lake with oxbowtest.lake.lake_type_samples().
LOG_ONLY = {"lake.enabled": "false"}


def column(typ, values, rows, shift=0):
    return pa.array([values[(i + shift) % len(values)] for i in range(rows)], type=typ)


def make_batches(schema, num_batches, rows_per_batch, values_by_field, first_id=0):
    """Batches whose non-key columns cycle through each type's values (shifted per batch)."""
    batches, next_id = [], first_id
    for b in range(num_batches):
        arrays = [pa.array(range(next_id, next_id + rows_per_batch), pa.int64())]
        arrays += [column(f.type, values_by_field[f.name], rows_per_batch, shift=b)
                   for f in list(schema)[1:]]
        batches.append(pa.record_batch(arrays, schema=schema))
        next_id += rows_per_batch
    return batches


def wide_schema():
    fields = [pa.field("id", pa.int64(), nullable=False)]
    fields += [pa.field(f"c_{i}", typ) for i, (typ, _) in enumerate(TYPES.values())]
    return pa.schema(fields)


def wide_values():
    return {f"c_{i}": values for i, (_, values) in enumerate(TYPES.values())}
