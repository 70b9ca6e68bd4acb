/**
 * Arrow Flight transport: `arrow.flight.protocol.FlightService/DoGet`,
 * in the Connect router on the TLS listener beside platform.retrieval.v1,
 * its FlightData messages written by hand (arrow/flight-data.ts) and sent
 * as they are (grpc-frames.ts).
 * The ticket is the JSON `{"job_id", "token"}` the platform SDK sends; the
 * token is single-use (tokens.ts). The stream is Arrow IPC (Flight.proto
 * `FlightData`): the schema, then record batches, then one metadata-only
 * message whose `app_metadata` is the footer (rows, chunks, filtered and
 * the gate audit). Every batch carries the gate audit so far in its
 * `app_metadata`.
 * `GetFlightInfo` with a command descriptor holding the same JSON splits the
 * read for parallel reading: the token is spent for one endpoint per slice
 * of the table (service.ts flightEndpoints), each with its own single-use
 * ticket; the endpoints' rows together are the job's. Other Flight methods
 * answer UNIMPLEMENTED (Connect's default for a method left out).
 */
import { create } from '@bufbuild/protobuf';
import type { ConnectRouter } from '@connectrpc/connect';
import { z } from 'zod';
import { toConnectError } from '../../../gateway/errors/connect-error.ts';
import {
  type FlightDescriptor,
  FlightDescriptor_DescriptorType,
  type FlightInfo,
  FlightInfoSchema,
  FlightService,
} from '../../../proto/gen/arrow/flight/protocol/Flight_pb.ts';
import { metadataFrame, withAppMetadata } from '../arrow/flight-data.ts';
import type { IpcMessage } from '../arrow/ipc.ts';
import { RetrievalErrors } from '../errors.ts';
import type { RetrievalService } from '../service.ts';
import { lazyModule } from '../sources/lazy.ts';
import type { JobStream, StreamReader } from '../stream.ts';
import { drained, openForRpc, UNCOMPRESSED } from './grpc.ts';
import { serveFrames } from './grpc-frames.ts';
import { footer } from './inline.ts';

/** Arrow, loaded with the first Flight stream: the platform.retrieval.v1 RPC, loaded with it, never needs it. */
const arrowStream = lazyModule('Arrow', () => import('../arrow/stream.ts'));

const FLIGHT_READER: StreamReader<IpcMessage> = {
  protocol: 'arrow-flight',
  transport: 'flight',
  singleUse: true,
  async encoder() {
    const { arrowMessages } = await arrowStream();
    return { encode: arrowMessages, size: (m) => [m.rowCount, m.frame.length] };
  },
};

const ticketJson = z.object({ job_id: z.string().min(1).max(256), token: z.string().min(1).max(4096) });

/** The ticket's (or command descriptor's) job and token; anything else is INVALID_ARGUMENT (pyarrow's ArrowInvalid). */
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

/** A batch's frame with the gate audit so far as its app_metadata (none when no gate is bound). */
function batchFrame(message: IpcMessage, stream: JobStream<IpcMessage>): Buffer {
  const { gateAudit, filtered } = stream.summary;
  if (!gateAudit || message.rowCount === 0) return message.frame;
  return withAppMetadata(message.frame, json({ gate_audit: gateAudit, filtered }));
}

function footerFrame(stream: JobStream<IpcMessage>): Buffer {
  const { rows, chunks, filtered } = stream.summary;
  return metadataFrame(json({ ...footer(stream.summary), filtered, rows, chunks }));
}

async function* flightFrames(stream: JobStream<IpcMessage>): AsyncGenerator<Buffer> {
  for await (const message of stream.chunks) yield batchFrame(message, stream);
  yield footerFrame(stream);
}

/** The FlightInfo of a command descriptor: one endpoint per slice of the job's read, each its own ticket. */
async function flightInfo(service: RetrievalService, descriptor: FlightDescriptor): Promise<FlightInfo> {
  if (descriptor.type !== FlightDescriptor_DescriptorType.CMD)
    throw RetrievalErrors.make.flight_ticket_invalid({ problem: 'expected a command descriptor' });
  const { jobId, token } = parseTicket(descriptor.cmd);
  const { tokens, locations } = await service.flightEndpoints(jobId, token);
  return create(FlightInfoSchema, {
    flightDescriptor: descriptor,
    endpoint: tokens.map((ticket) => ({
      ticket: { ticket: json({ job_id: jobId, token: ticket }) },
      location: locations.map((uri) => ({ uri })),
    })),
    totalRecords: -1n,
    totalBytes: -1n,
  });
}

export function registerFlightRpc(router: ConnectRouter, service: RetrievalService): void {
  // Every other method Connect's (UNIMPLEMENTED); DoGet's gRPC handler replaced by one sending the frames as built.
  router.service(
    FlightService,
    {
      async getFlightInfo(descriptor) {
        try {
          return await flightInfo(service, descriptor);
        } catch (error) {
          throw toConnectError(error);
        }
      },
    },
    UNCOMPRESSED,
  );
  serveFrames(router.handlers, FlightService.method.doGet, async function* doGet(request, context) {
    const stream = await openForRpc(() => {
      const { jobId, token } = parseTicket(request.ticket);
      return service.tokenStream(jobId, token, FLIGHT_READER);
    });
    yield* drained(stream, context, flightFrames(stream));
  });
}
