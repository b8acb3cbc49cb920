"""pyarrow's side of profiling a Parquet read: reads FILE into memory, then `pq.read_table` of it
REPS times, one thread, page checksums verified, as bench/parquet_bench.py times pyarrow.

    valgrind --tool=callgrind .venv/bin/python bench/pyarrow_read.py FILE 1   # minus REPS=0
    perf stat -e task-clock,page-faults .venv/bin/python bench/pyarrow_read.py FILE 5

Beside `parquet_bench read --read FILE --reps N` (docs/bench.md). Prints each read's CPU time.
"""

import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

pa.set_cpu_count(1)
pa.set_io_thread_count(1)
with open(sys.argv[1], "rb") as f:
    data = pa.py_buffer(f.read())
for _ in range(int(sys.argv[2])):
    start = time.process_time()
    table = pq.read_table(pa.BufferReader(data), use_threads=False,
                          page_checksum_verification=True)
    print(f"cpu {time.process_time() - start:.4f}")
    del table
