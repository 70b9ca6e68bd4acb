/**
 * Arrow Flight transport: `arrow.flight.protocol.FlightService/DoGet`,
 * served by Connect-RPC on the TLS listener beside platform.retrieval.v1.
 * The ticket is the JSON `{"job_id", "token"}` the platform SDK sends; the
 * token is single-use (tokens.ts). The stream is Arrow IPC (Flight.proto
 * `FlightData`): the schema, then record batches, then one metadata-only
 * message whose `app_metadata` is the footer (rows, chunks, filtered and
 * the gate audit). Every batch carries the gate audit so far in its
 * `app_metadata`. Other Flight methods answer UNIMPLEMENTED (Connect's
 * default for a method left out).
 */
import { create } from '@bufbuild/protobuf';
import type { ConnectRouter } from '@connectrpc/connect';
import { z } from 'zod';
import {
  type FlightData,
  FlightDataSchema,
  FlightService,
} from '../../../proto/gen/arrow/flight/protocol/Flight_pb.ts';
import type { IpcMessage } from '../arrow/ipc.ts';
import { RetrievalErrors } from '../errors.ts';
import type { JobStream, RetrievalService } from '../service.ts';
import { drained, openForRpc, UNCOMPRESSED } from './grpc.ts';
import { footer } from './inline.ts';

const ticketJson = z.object({ job_id: z.string().min(1).max(256), token: z.string().min(1).max(4096) });

/** The ticket's job and token; anything else is INVALID_ARGUMENT (a Flight client's ArrowInvalid). */
export function parseTicket(ticket: Uint8Array): { jobId: string; token: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(ticket).toString('utf8'));
  } catch {
    throw RetrievalErrors.make.flight_ticket_invalid({ problem: 'not JSON' });
  }
  const ticketFields = ticketJson.safeParse(parsed);
  if (!ticketFields.success)
    throw RetrievalErrors.make.flight_ticket_invalid({ problem: 'expected {"job_id", "token"}' });
  return { jobId: ticketFields.data.job_id, token: ticketFields.data.token };
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

function flightData(message: IpcMessage, stream: JobStream<IpcMessage>): FlightData {
  const audit = stream.summary.gateAudit
    ? json({ gate_audit: stream.summary.gateAudit, filtered: stream.summary.filtered })
    : new Uint8Array(0);
  return create(FlightDataSchema, {
    dataHeader: message.header,
    dataBody: message.body,
    appMetadata: message.rowCount > 0 ? audit : new Uint8Array(0),
  });
}

function footerData(stream: JobStream<IpcMessage>): FlightData {
  const { rows, chunks, filtered } = stream.summary;
  return create(FlightDataSchema, { appMetadata: json({ ...footer(stream.summary), filtered, rows, chunks }) });
}

async function* flightMessages(stream: JobStream<IpcMessage>): AsyncGenerator<FlightData> {
  for await (const message of stream.chunks) yield flightData(message, stream);
  yield footerData(stream);
}

export function registerFlightRpc(router: ConnectRouter, service: RetrievalService): void {
  router.service(
    FlightService,
    {
      async *doGet(request, context) {
        const stream = await openForRpc(() => {
          const { jobId, token } = parseTicket(request.ticket);
          return service.flightStream(jobId, token);
        });
        yield* drained(stream, context, flightMessages(stream));
      },
    },
    UNCOMPRESSED,
  );
}
