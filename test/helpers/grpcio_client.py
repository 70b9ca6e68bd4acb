"""gRPC's reference client (grpcio, the C-core) for the retrieval stream:
the interoperability tests (test/integration/domains/retrieval/grpcio.test.ts) and
the retrieval benchmark run it. The platform's public SDK is Python.

One job per stdin line, as JSON:
    {"endpoint": "grpcs://host:port", "job_id": ..., "token": ...,
     "from_sequence": 0, "token_in": "request" | "metadata", "detail": false}
One JSON line out per job: {"rows", "bytes", "seconds"} (seconds: from the
call to the last message), with "chunks" (sequence, row_count, final,
metadata) and "data" (the rows) when "detail" is true, or {"error":
{"code", "details"}} when the call fails. Stubs are generated from the
repository's proto into a temporary directory at start.

    python grpcio_client.py <repo root> <CA file>
"""

import atexit
import importlib
import json
import shutil
import sys
import tempfile
import time

import grpc
from grpc_tools import protoc


def load_stubs(root: str):
    # Compiled from a copy at the top of a temporary directory: the proto's own
    # path starts with `platform/`, which Python would take for its stdlib module.
    out = tempfile.mkdtemp(prefix="grpcio-client-")
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    shutil.copy(f"{root}/proto/platform/retrieval/v1/retrieval.proto", out)
    if protoc.main(["protoc", f"-I{out}", f"--python_out={out}", f"--grpc_python_out={out}", "retrieval.proto"]) != 0:
        raise SystemExit("protoc failed")
    sys.path.insert(0, out)
    return importlib.import_module("retrieval_pb2"), importlib.import_module("retrieval_pb2_grpc")


def stream(pb, stub, job: dict) -> dict:
    by_metadata = job.get("token_in") == "metadata"
    request = pb.StreamDataRequest(job_id=job["job_id"], token="" if by_metadata else job["token"], from_sequence=job.get("from_sequence", 0))
    metadata = [("authorization", f"Bearer {job['token']}")] if by_metadata else None
    detail = job.get("detail", False)
    result = {"rows": 0, "bytes": 0}
    chunks, data = [], []
    start = time.perf_counter()
    try:
        for chunk in stub.StreamData(request, metadata=metadata):
            result["rows"] += chunk.row_count
            result["bytes"] += len(chunk.payload)
            if detail:
                chunks.append({"sequence": chunk.sequence, "row_count": chunk.row_count, "final": chunk.final, "metadata": dict(chunk.metadata)})
                if not chunk.final:
                    data.extend(json.loads(chunk.payload))
    except grpc.RpcError as error:
        return {"error": {"code": error.code().name, "details": error.details()}}
    result["seconds"] = time.perf_counter() - start
    if detail:
        result["chunks"], result["data"] = chunks, data
    return result


def main() -> None:
    root, ca_file = sys.argv[1], sys.argv[2]
    pb, pb_grpc = load_stubs(root)
    with open(ca_file, "rb") as f:
        credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
    stubs = {}
    for line in sys.stdin:
        job = json.loads(line)
        target = job["endpoint"].removeprefix("grpcs://")
        if target not in stubs:
            stubs[target] = pb_grpc.RetrievalServiceStub(grpc.secure_channel(target, credentials))
        print(json.dumps(stream(pb, stubs[target], job)), flush=True)


if __name__ == "__main__":
    main()
