"""An OTLP/HTTP traces receiver for the tracing tests (test/helpers/peers/otlp.ts).

Every export request is decoded into the OpenTelemetry protocol's own
ExportTraceServiceRequest (PyPI `opentelemetry-proto`, scripts/peers/otlp.sh),
as a collector would: binary protobuf (`application/x-protobuf`) or OTLP/JSON
(`application/json`), https://opentelemetry.io/docs/specs/otlp/#otlphttp.
A request that does not decode is answered 400 and named on stderr; each
span of one that does is printed on stdout as one line, `span <JSON>`.

Served by Werkzeug, which decodes a chunked body (the Node.js exporter sends
one). Listens on 127.0.0.1, a free port; prints `listening on <url>` when ready.
"""

import base64
import json
import logging
import sys
import threading

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

PATH = "/v1/traces"
# OTLP/JSON writes these bytes fields in hex where protobuf's JSON mapping has base64
# (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding).
HEX_ID_FIELDS = ("traceId", "spanId", "parentSpanId")
# Requests are served on threads; one request's lines are written together.
PRINTING = threading.Lock()


def ids_to_base64(holder):
    for field in HEX_ID_FIELDS:
        if field in holder:
            holder[field] = base64.b64encode(bytes.fromhex(holder[field])).decode("ascii")


def from_otlp_json(body):
    document = json.loads(body)
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                ids_to_base64(span)
                for link in span.get("links", []):
                    ids_to_base64(link)
    # Strict: a field the protocol does not define is an error here, not ignored as a collector would.
    return json_format.ParseDict(document, ExportTraceServiceRequest())


def from_protobuf(body):
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    return request


def any_value(value):
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind in ("array_value", "kvlist_value", "bytes_value"):
        return json_format.MessageToDict(value)
    return getattr(value, kind)


def attributes(key_values):
    return {kv.key: any_value(kv.value) for kv in key_values}


def spans_of(request):
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                if len(span.trace_id) != 16 or len(span.span_id) != 8 or len(span.parent_span_id) not in (0, 8):
                    raise ValueError(f"span {span.name!r}: ids of the wrong length")
                yield {
                    "resource": resource,
                    "scope": scope_spans.scope.name,
                    "name": span.name,
                    "traceId": span.trace_id.hex(),
                    "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex(),
                    "kind": Span.SpanKind.Name(span.kind),
                    "attributes": attributes(span.attributes),
                    "status": {"code": Status.StatusCode.Name(span.status.code), "message": span.status.message},
                }


DECODERS = {"application/json": from_otlp_json, "application/x-protobuf": from_protobuf}


@Request.application
def receive(request):
    if request.path != PATH:
        return Response("not found", status=404)
    if request.method != "POST":
        return Response("method not allowed", status=405)
    decode = DECODERS.get(request.mimetype)
    if decode is None:
        return Response("unsupported content type", status=415)
    try:
        lines = [f"span {json.dumps(span)}\n" for span in spans_of(decode(request.get_data()))]
    except Exception as error:  # noqa: BLE001 - any decode failure is the sender's, answered 400
        print(f"rejected: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        return Response("undecodable export request", status=400)
    with PRINTING:
        sys.stdout.write("".join(lines))
        sys.stdout.flush()
    answer = ExportTraceServiceResponse()
    if request.mimetype == "application/json":
        return Response(json_format.MessageToJson(answer), content_type=request.mimetype)
    return Response(answer.SerializeToString(), content_type=request.mimetype)


def main():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per span on stdout is the output
    server = make_server("127.0.0.1", 0, receive, threaded=True)
    print(f"listening on http://127.0.0.1:{server.server_port}{PATH}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
