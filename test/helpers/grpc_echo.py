"""A grpcio echo service without protobuf (raw bytes in and out), as a server or as a client.

server: `grpc_echo.py server` serves `/bench.Echo/Say` on cleartext HTTP/2 (h2c) and prints `listening <port>`.
client: `grpc_echo.py client <host:port> <ca.pem> <token> <method path> <calls>` makes the calls concurrently over
one TLS channel with the token as `authorization` metadata and prints one JSON line: the answers, or the error.
"""
import json
import sys
from concurrent import futures

import grpc


def serve():
    def say(request, context):
        context.set_trailing_metadata((("x-echo-length", str(len(request))),))
        return b"echo " + request

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    handler = grpc.method_handlers_generic_handler("bench.Echo", {"Say": grpc.unary_unary_rpc_method_handler(say)})
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening {port}", flush=True)
    server.wait_for_termination()


def call(target, ca_file, token, method, calls):
    with open(ca_file, "rb") as f:
        credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
    options = (("grpc.ssl_target_name_override", "localhost"),)
    with grpc.secure_channel(target, credentials, options=options) as channel:
        say = channel.unary_unary(method)
        metadata = (("authorization", f"Bearer {token}"),)
        try:
            with futures.ThreadPoolExecutor(max_workers=16) as pool:
                answers = list(pool.map(lambda i: say(f"call {i}".encode(), metadata=metadata), range(calls)))
            print(json.dumps({"answers": [a.decode() for a in answers]}), flush=True)
        except grpc.RpcError as error:
            print(json.dumps({"error": {"code": error.code().name, "details": error.details()}}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve()
    else:
        call(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
