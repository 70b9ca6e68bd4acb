"""The direct readers the retrieval benchmark compares the gateway with
(bench/retrieval/peers.ts): a PostgreSQL table read straight into a pyarrow
Table by Apache Arrow's ADBC PostgreSQL driver (binary COPY into Arrow
buffers) or by ConnectorX (optionally split on an integer column into
partitions read at once). scripts/peers/adbc.sh installs them.

One read per stdin line, as JSON:
    {"reader": "adbc" | "connectorx", "uri": "postgresql://…", "query": "SELECT * FROM t",
     "partition_on": null, "partitions": null}
One JSON line out per read: {"rows", "seconds", "cpu_seconds"} (wall time of
the read, connection included, and this process's CPU time over it), or
{"error": {"type", "message"}}.

    python direct_client.py
"""

import json
import sys
import time

import adbc_driver_postgresql.dbapi as adbc
import connectorx


def read(job: dict):
    if job["reader"] == "adbc":
        with adbc.connect(job["uri"]) as connection, connection.cursor() as cursor:
            cursor.execute(job["query"])
            return cursor.fetch_arrow_table()
    split = {}
    if job.get("partition_on"):
        split = {"partition_on": job["partition_on"], "partition_num": job["partitions"]}
    return connectorx.read_sql(job["uri"], job["query"], return_type="arrow", **split)


def main() -> None:
    for line in sys.stdin:
        job = json.loads(line)
        cpu, started = time.process_time(), time.perf_counter()
        try:
            table = read(job)
            answer = {
                "rows": table.num_rows,
                "seconds": time.perf_counter() - started,
                "cpu_seconds": time.process_time() - cpu,
            }
        except Exception as exc:  # the benchmark reports it and stops
            answer = {"error": {"type": type(exc).__name__, "message": str(exc)}}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
