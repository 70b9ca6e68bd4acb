"""A Python grpcio client for bench/retrieval (the platform's public SDK is
Python; grpcio is gRPC's C-core, with its default BDP-probing flow control).

Reads one job per stdin line, `<grpcs endpoint> <job id> <token>`, streams it
with StreamData, and prints `<rows> <seconds> <payload bytes>` per job (the time from the
call to the final message). Stubs are generated from the repository's proto
into a temporary directory at start, so nothing generated is committed.

    python grpc_client.py <repo root> <CA file>
"""

import importlib
import shutil
import sys
import tempfile
import time

import grpc
from grpc_tools import protoc


def load_stubs(root: str):
    # Compiled from a copy at the top of a temporary directory: the proto's own
    # path starts with `platform/`, which Python would take for its stdlib module.
    out = tempfile.mkdtemp(prefix="bench-grpc-py-")
    shutil.copy(f"{root}/proto/platform/retrieval/v1/retrieval.proto", out)
    if protoc.main(["protoc", f"-I{out}", f"--python_out={out}", f"--grpc_python_out={out}", "retrieval.proto"]) != 0:
        raise SystemExit("protoc failed")
    sys.path.insert(0, out)
    return importlib.import_module("retrieval_pb2"), importlib.import_module("retrieval_pb2_grpc")


def main() -> None:
    root, ca_file = sys.argv[1], sys.argv[2]
    pb, pb_grpc = load_stubs(root)
    with open(ca_file, "rb") as f:
        credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
    channels = {}
    for line in sys.stdin:
        endpoint, job_id, token = line.split()
        target = endpoint.removeprefix("grpcs://")
        if target not in channels:
            channels[target] = pb_grpc.RetrievalServiceStub(grpc.secure_channel(target, credentials))
        stub = channels[target]
        rows = size = 0
        start = time.perf_counter()
        for chunk in stub.StreamData(pb.StreamDataRequest(job_id=job_id, token=token)):
            rows += chunk.row_count
            size += len(chunk.payload)
        print(rows, time.perf_counter() - start, size, flush=True)


if __name__ == "__main__":
    main()
