"""The platform's public Python SDK (kamiwaza-sdk, scripts/peers/sdk.sh)
driven against a real meshgate by test/integration/domains/retrieval/sdk-python.test.ts.

    python sdk_scenarios.py <scenario> '<json arguments>'

Prints one JSON object: what the SDK returned, as plain values, or
{"error": {"type", "message"}} when the SDK raised. The test asserts on it.
Every call goes through the SDK's own client (requests for the API, the
openai client for runtime URLs), with TLS verified against the gateway's CA.
"""

import json
import sys
import traceback

from kamiwaza_sdk import KamiwazaClient
from kamiwaza_sdk.schemas.retrieval import RetrievalRequest


def client_for(args: dict) -> KamiwazaClient:
    return KamiwazaClient(base_url=args["base_url"], api_key=args["token"], ca_bundle=args["ca_file"])


def retrieval(args: dict) -> dict:
    """Catalog a file dataset, then read it inline, over SSE, and ask for a gRPC job."""
    client = client_for(args)
    dataset = client.catalog.create_dataset(dataset_name=args["name"], platform="file", properties={"path": args["path"]})
    urn = dataset.urn
    inline = client.retrieval.materialize(RetrievalRequest(dataset_urn=urn))
    sse_job = client.retrieval.create_job(RetrievalRequest(dataset_urn=urn, transport="sse", batch_size=2))
    events = [{"event": e.event, "data": e.data} for e in client.retrieval.stream_events(sse_job.job_id)]
    status = client.retrieval.get_job(sse_job.job_id)
    grpc_job = client.retrieval.create_job(RetrievalRequest(dataset_urn=urn, transport="grpc"))
    return {
        "urn": urn,
        "listed": [d.urn for d in client.catalog.list_datasets()],
        "inline": {"transport": inline.job.transport.value, "rows": inline.inline.data, "row_count": inline.inline.row_count},
        "sse": {"transport": sse_job.transport.value, "events": events},
        "status": {"status": status.status, "rows": status.progress.rows_processed, "chunks": status.progress.chunks_emitted},
        "grpc": {
            "transport": grpc_job.transport.value,
            "locations": [e.location for e in grpc_job.grpc.endpoints],
            "has_token": bool(grpc_job.grpc.token),
        },
    }


def gated(args: dict) -> dict:
    """Each caller reads a clearance-gated dataset inline and over SSE with their own token."""
    out = {}
    for label, token in args["tokens"].items():
        client = client_for({**args, "token": token})
        inline = client.retrieval.materialize(RetrievalRequest(dataset_urn=args["urn"]))
        job = client.retrieval.create_job(RetrievalRequest(dataset_urn=args["urn"], transport="sse"))
        events = list(client.retrieval.stream_events(job.job_id))
        chunks = [e.data for e in events if e.event == "chunk"]
        out[label] = {
            "inline_rows": [r["id"] for r in inline.inline.data],
            "inline_gate_audit": inline.inline.metadata.get("gate_audit"),
            "sse_rows": [r["id"] for c in chunks for r in c["data"]],
            "sse_filtered": [c["metadata"]["gate_audit"]["filtered"] for c in chunks],
        }
    return out


def gate_setup(args: dict) -> dict:
    """The clearance fixture's local setup, every step through the SDK: declare the attribute,
    discover the gate class, catalog the dataset and bind its gate, seed subjects with clearance and grants;
    then the vocabulary's lifecycle calls on a second attribute."""
    client = client_for(args)
    declared = client.cluster.declare_attribute("clearance", type="string")
    classpath = "acme_gates.mini_clearance_gate.MiniClearanceGate"
    discovered = client.gates.discover(classpath)
    urn = client.datasets.create(name="mini-clearance", platform="file", properties={"path": args["path"]})
    binding = client.datasets.set_gate(urn, type=classpath, config={})
    for username, clearance in args["personas"].items():
        client.subjects.upsert(username, attributes={"clearance": clearance}, password=args["password"])
        client.subjects.grants(username).create(object_namespace="dataset", object_id=urn, relation="viewer")
    client.cluster.declare_attribute("badge", type="string", sensitive=True)
    deprecated = client.cluster.deprecate_attribute("badge")
    withdrawn = client.cluster.withdraw_attribute("badge")
    return {
        "urn": urn,
        "declared": {"name": declared.name, "type": declared.type, "state": declared.state, "sensitive": declared.sensitive},
        "discovered": {"name": discovered.name, "kind": discovered.kind, "required": [a["key"] for a in discovered.required_attributes]},
        "gate": {"gate_name": binding.gate_name, "kind": binding.kind},
        "listed": [(a.name, a.state) for a in client.cluster.list_attributes()],
        "declared_only": [a.name for a in client.cluster.list_attributes(include_deprecated=False)],
        "deprecated": {"state": deprecated.state, "deprecated_at": bool(deprecated.deprecated_at)},
        "withdrawn": withdrawn,
    }


def openai(args: dict) -> dict:
    """Find a model deployment by name as the SDK does, then chat through its runtime URL."""
    client = client_for(args)
    deployments = client.serving.list_deployments()
    active = client.serving.list_active_deployments()
    one = client.serving.get_deployment(deployments[0].id)
    status = client.serving.get_deployment_status(deployments[0].id)
    oa = client.openai.get_client(model=args["model"])
    messages = [{"role": "user", "content": "hi"}]
    whole = oa.chat.completions.create(model="test-model", messages=messages)
    streamed = oa.chat.completions.create(model="test-model", messages=messages, stream=True)
    pieces = [c.choices[0].delta.content or "" for c in streamed if c.choices]
    models = [m.id for m in oa.models.list()]
    stopped = client.serving.stop_deployment(deployment_id=deployments[0].id)
    after = client.serving.list_deployments()
    return {
        "deployments": [{"id": str(d.id), "m_name": d.m_name, "status": d.status} for d in deployments],
        "endpoints": [a.endpoint for a in active],
        "get": {"id": str(one.id), "m_name": one.m_name, "access_path": one.access_path},
        "status": status,
        "base_url": str(oa.base_url),
        "models": models,
        "content": whole.choices[0].message.content,
        "streamed": "".join(pieces),
        "stopped": stopped,
        "after_stop": [str(d.id) for d in after],
    }


def flight(args: dict) -> dict:
    """Each caller reads the dataset over Arrow Flight with the SDK's flight_batches, then replays the handshake."""
    out = {}
    for label, token in args["tokens"].items():
        client = client_for({**args, "token": token})
        job = client.retrieval.create_job(RetrievalRequest(dataset_urn=args["urn"], transport="grpc"))
        batches = list(client.retrieval.flight_batches(job))
        status = client.retrieval.get_job(job.job_id)
        try:
            list(client.retrieval.flight_batches(job))
            replay = None
        except Exception as error:  # the second DoGet with a spent token
            replay = type(error).__name__
        out[label] = {
            "protocol": job.grpc.protocol,
            "rows": [row for batch in batches for row in batch.to_pylist()],
            "schema": [[f.name, str(f.type)] for f in batches[0].schema] if batches else [],
            "status": status.status,
            "replay": replay,
        }
    return out


def main() -> None:
    scenario, args = sys.argv[1], json.loads(sys.argv[2])
    try:
        scenarios = {"retrieval": retrieval, "gated": gated, "gate_setup": gate_setup, "openai": openai, "flight": flight}
        result = (scenarios.get(scenario) or LATER_SCENARIOS[scenario])(args)
    except Exception as error:  # the test shows what the SDK raised, and where
        ours = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == __file__]
        at = f"{ours[-1].name}:{ours[-1].lineno} {ours[-1].line}" if ours else None
        result = {"error": {"type": type(error).__name__, "message": str(error)[:2000], "at": at}}
    print(json.dumps(result, default=str))



def cluster_calls(args: dict) -> dict:
    """Capabilities here and at a paired peer over the mesh, diagnose, and who the gateway says we are."""
    client = client_for(args)
    local = client.cluster.capabilities()
    remote = client.federations[args["federation"]].probe()
    diagnostics = client.cluster.diagnose()
    return {
        "local": local.model_dump(),
        "remote": remote.model_dump(),
        "diagnose": {"cluster_id": diagnostics.cluster_id, "has_issues": diagnostics.has_issues, "ids": [i.id for i in diagnostics.issues]},
        "whoami": client.get("/whoami"),
    }


def auth_calls(args: dict) -> dict:
    """Forward-auth headers for a good and a bad token, the JWKS, and a PAT listed with its lifetime."""
    from kamiwaza_sdk.schemas.auth import PATCreate

    client = client_for(args)
    headers = client.auth.forward_auth_headers()
    refused = None
    try:
        client_for({**args, "token": "not-a-token"}).auth.forward_auth_headers()
    except Exception as error:  # what the SDK raises for a 401 here
        refused = {"type": type(error).__name__, "status": getattr(error, "status_code", None)}
    jwks = client.auth.get_jwks()
    client.auth.create_pat(PATCreate(name="ci", ttl_seconds=3600))
    return {
        "headers": {"user_id": headers.user_id, "user_name": headers.user_name, "roles": headers.user_roles, "auth_token": headers.auth_token},
        "refused": refused,
        "jwks": [(k.kty, k.alg, bool(k.n), bool(k.e)) for k in jwks.keys],
        "pats": [(p.name, p.ttl_seconds) for p in client.auth.list_pats().pats],
    }


def jobs_calls(args: dict) -> dict:
    """run(recoverable=True) with a marker, without one, and a failing job, as JobResult reports them."""
    client = client_for(args)
    out = {}
    for label, entrypoint in args["entrypoints"].items():
        job = client.jobs.run(entrypoint=entrypoint, recoverable=True, timeout_seconds=60)
        out[label] = {"status": job.status, "result": job.result, "audit_actor": job.audit_actor, "error": job.error}
    return out


def catalog_paths(args: dict) -> dict:
    """Container membership and secret get/delete through the path-style routes, URNs encoded as the SDK encodes them."""
    from kamiwaza_sdk.schemas.catalog import ContainerCreate, SecretCreate
    from kamiwaza_sdk.services.catalog import ContainerClient

    client = client_for(args)
    container = client.catalog.containers.create(ContainerCreate(name="/a/b (c)", platform="s3"))
    dataset = client.catalog.create_dataset(dataset_name="member", platform="file", properties={"path": "/nowhere"}).urn
    members = f"/catalog/containers/{ContainerClient.encode_path_urn(container)}/datasets"
    added = client.post(members, json={"dataset_urn": dataset})
    listed = client.catalog.containers.get(container).datasets
    removed = client.delete(f"{members}/{ContainerClient.encode_path_urn(dataset)}")
    secret = client.catalog.secrets.create(SecretCreate(name="pg/pass", value="s3cr3t", owner="urn:li:corpuser:admin"))
    secret_path = f"/catalog/secrets/{ContainerClient.encode_path_urn(secret)}"
    got = client.get(secret_path)
    client.delete(secret_path)
    gone = None
    try:
        client.get(secret_path)
    except Exception as error:
        gone = type(error).__name__
    return {"added": added, "listed": listed, "removed": removed, "secret": got, "gone": gone}


def retrieval_errors(args: dict) -> dict:
    """What the SDK's retrieval wrapper raises for an unknown dataset and for one the caller may not read."""
    out = {}
    for label, token in args["tokens"].items():
        try:
            client_for({**args, "token": token}).retrieval.materialize(RetrievalRequest(dataset_urn=args["urns"][label]))
            out[label] = None
        except Exception as error:
            out[label] = {"type": type(error).__name__, "message": str(error)}
    return out


def authz_check(args: dict) -> dict:
    """check_access for each tuple: an allow as the SDK returns it, a deny as what it raises (a 403 access_denied)."""
    from kamiwaza_sdk.schemas.authz import CheckRequest

    client = client_for(args)
    out = {}
    for label, tuple_ in args["checks"].items():
        try:
            answer = client.authz.check_access(CheckRequest(**tuple_))
            out[label] = {"allow": answer.allow, "reason": answer.reason}
        except Exception as error:  # what check_access raises for a deny
            body = getattr(error, "response_data", None) or {}
            out[label] = {
                "raised": type(error).__name__,
                "status": getattr(error, "status_code", None),
                "detail": body.get("detail"),
                "allow": body.get("allow"),
                "reason": body.get("reason"),
            }
    return out


LATER_SCENARIOS = {
    "authz_check": authz_check,
    "cluster_calls": cluster_calls,
    "auth_calls": auth_calls,
    "jobs_calls": jobs_calls,
    "catalog_paths": catalog_paths,
    "retrieval_errors": retrieval_errors,
}


if __name__ == "__main__":
    main()
