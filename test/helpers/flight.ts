/**
 * Apache Arrow's Flight client, pyarrow.flight (scripts/peers/sdk.sh installs
 * it with the SDK's `flight` extra; test/helpers/flight_client.py), as one
 * long-lived process: a DoGet per call, verified against the gateway's CA.
 */
import type { After } from './gateway.ts';
import { startLineClient } from './line-client.ts';
import { peerScript } from './peers/process.ts';
import type { Row } from './retrieval.ts';

export interface FlightGet {
  /** A job's `grpc.endpoints[0].location`, `grpc+tls://host:port`. */
  location: string;
  /** The ticket: the SDK's JSON `{job_id, token}`, or raw text (to send a malformed one). */
  ticket: { job_id: string; token: string } | string;
  /** Also return the schema, the rows and every message's app_metadata. */
  detail?: boolean;
  /** Cancel the read after this many batches. */
  stop_after?: number;
  /** The TLS name to verify when `location` names an address instead. */
  override_hostname?: string;
  /** Send the ticket as a GetFlightInfo command descriptor and read every endpoint of the answer at once. */
  parallel?: boolean;
  /** Read each stream as one pyarrow Table (`read_all()`); no detail. */
  read_all?: boolean;
}

export interface FlightResult {
  rows: number;
  batches: number;
  bytes: number;
  seconds: number;
  schema?: [string, string][];
  data?: Row[];
  metadata?: any[];
  /** With `parallel`: how many endpoints were read, and each one's location URIs. */
  endpoints?: number;
  locations?: string[][];
  /** With `parallel`: each endpoint's ticket, as sent. */
  tickets?: string[];
  /** A failed call: pyarrow's exception class (FlightUnauthenticatedError, ArrowInvalid, …) and message. */
  error?: { type: string; message: string };
}

export async function startFlightClient(
  t: After,
  caPem: string,
): Promise<{ get(request: FlightGet): Promise<FlightResult>; pid: number }> {
  const python = await peerScript('sdk');
  const client = startLineClient<FlightGet, FlightResult>(t, python, 'flight_client.py', caPem, (ca) => [ca]);
  return { get: (request) => client.call(request), pid: client.pid };
}

/** The DoGet of a job's `grpc` block, as the SDK builds it. */
export function flightGet(
  job: { job_id: string; grpc: { token: string; endpoints: { location: string }[] } },
  detail = true,
): FlightGet {
  return {
    location: job.grpc.endpoints[0]?.location as string,
    ticket: { job_id: job.job_id, token: job.grpc.token },
    detail,
  };
}
