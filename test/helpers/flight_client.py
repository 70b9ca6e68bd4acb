"""Apache Arrow's Flight client (pyarrow.flight) for the Arrow Flight retrieval
stream: the interoperability tests (test/integration/retrieval-flight*.test.ts)
and the retrieval benchmark run it.

One DoGet per stdin line, as JSON:
    {"location": "grpc+tls://host:port", "ticket": {"job_id", "token"} | "raw text",
     "detail": false, "stop_after": null, "override_hostname": null, "parallel": false,
     "read_all": false}
With "read_all" the stream is read as one pyarrow Table (`read_all()`, what
a user who wants a table calls) instead of batch by batch.
With "parallel" the ticket is sent as a command descriptor to GetFlightInfo
and every endpoint of the answer is read at once, one thread each (their
rows and batches summed, "endpoints" their count), as a client reading a
partitioned flight does.
One JSON line out per call: {"rows", "batches", "bytes", "seconds"} (seconds:
from the call to the end of the stream), with "schema" ([name, type] pairs),
"data" (the rows, values in JSON: dates and times ISO 8601, decimals as text,
bytes as hex, integers past 2^53 as digits) and "metadata" (each message's app_metadata, decoded) when
"detail" is true, or {"error": {"type", "message"}} when the call fails (the
pyarrow exception's class, e.g. FlightUnauthenticatedError). "stop_after"
cancels the read after that many batches; "override_hostname" is the TLS
name to verify when the location is an address (a test peer's fed-x.test).

    python flight_client.py <CA file>
"""

import datetime
import decimal
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pyarrow.flight as flight


def plain(value):
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(type(value).__name__)


def exact(row: dict) -> dict:
    """Integers past 2^53 as their digits: a JSON reader in JavaScript would round them."""
    return {k: str(v) if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53 else v for k, v in row.items()}


def ticket_of(spec) -> flight.Ticket:
    raw = spec if isinstance(spec, str) else json.dumps(spec)
    return flight.Ticket(raw.encode())


def read_parallel(client: flight.FlightClient, job: dict) -> dict:
    started = time.perf_counter()
    raw = job["ticket"] if isinstance(job["ticket"], str) else json.dumps(job["ticket"])
    info = client.get_flight_info(flight.FlightDescriptor.for_command(raw.encode()))
    endpoints = list(info.endpoints)
    with ThreadPoolExecutor(max_workers=len(endpoints)) as pool:
        parts = list(pool.map(lambda e: read(client, {**job, "ticket": e.ticket.ticket.decode()}), endpoints))
    for part in parts:
        if "error" in part:
            return part
    out = {"rows": 0, "batches": 0, "bytes": 0, "endpoints": len(endpoints)}
    for key in ("rows", "batches", "bytes"):
        out[key] = sum(part[key] for part in parts)
    if job.get("detail", False):
        out.update(schema=parts[0]["schema"], data=[r for p in parts for r in p["data"]])
        out["metadata"] = [m for p in parts for m in p["metadata"]]
    out["locations"] = [[loc.uri.decode() for loc in e.locations] for e in endpoints]
    out["tickets"] = [e.ticket.ticket.decode() for e in endpoints]
    out["seconds"] = time.perf_counter() - started
    return out


def read(client: flight.FlightClient, job: dict) -> dict:
    started = time.perf_counter()
    reader = client.do_get(ticket_of(job["ticket"]))
    if job.get("read_all"):
        table = reader.read_all()
        seconds = time.perf_counter() - started
        return {"rows": table.num_rows, "batches": len(table.to_batches()), "bytes": table.nbytes, "seconds": seconds}
    out = {"rows": 0, "batches": 0, "bytes": 0}
    detail = job.get("detail", False)
    if detail:
        out.update(schema=[[f.name, str(f.type)] for f in reader.schema], data=[], metadata=[])
    while True:
        try:
            chunk = reader.read_chunk()
        except StopIteration:
            break
        if detail and chunk.app_metadata is not None:
            out["metadata"].append(json.loads(chunk.app_metadata.to_pybytes() or b"null"))
        if chunk.data is None:
            continue
        out["rows"] += chunk.data.num_rows
        out["batches"] += 1
        out["bytes"] += chunk.data.nbytes
        if detail:
            out["data"].extend(exact(row) for row in chunk.data.to_pylist())
        if job.get("stop_after") is not None and out["batches"] >= job["stop_after"]:
            reader.cancel()
            break
    out["seconds"] = time.perf_counter() - started
    return out


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        roots = f.read()
    clients: dict[tuple, flight.FlightClient] = {}
    for line in sys.stdin:
        job = json.loads(line)
        try:
            location, name = job["location"], job.get("override_hostname")
            if (location, name) not in clients:
                options = {"override_hostname": name} if name else {}
                clients[(location, name)] = flight.connect(location, tls_root_certs=roots, **options)
            answer = (read_parallel if job.get("parallel") else read)(clients[(location, name)], job)
        except Exception as exc:  # the test reads the class: the Flight status a client sees
            answer = {"error": {"type": type(exc).__name__, "message": str(exc)}}
        print(json.dumps(answer, default=plain), flush=True)


if __name__ == "__main__":
    main()
