/**
 * Gate discovery: `POST /authz/gates/discover` describes a
 * gate class — execution (jobs) or per-record (retrieval) — before it is
 * bound. Owns the reasons both kinds of binding share (errors.ts).
 */
import { z } from 'zod';
import { readJson } from '../../gateway/http/body.ts';
import type { HandlerModule } from '../../gateway/module.ts';
import {
  EXECUTION_GATE_CATALOG,
  type GateDescription,
  gateDescriptionAnswer,
  RECORD_GATE_CATALOG,
  unshippedGate,
} from './catalog.ts';
import { GateErrors } from './errors.ts';

export { EXECUTION_GATE_CATALOG, type GateCatalog, RECORD_GATE_CATALOG, unshippedGate } from './catalog.ts';
export { GateErrors } from './errors.ts';

const discoverBody = z.object({ classpath: z.string().min(1).max(512) });

export const gatesModule: HandlerModule = {
  name: 'gates',
  errors: GateErrors,
  init(deps) {
    const discover = (classpath: string): GateDescription => {
      for (const key of [EXECUTION_GATE_CATALOG, RECORD_GATE_CATALOG]) {
        const found = deps.services.get(key).describe(classpath);
        if (found) return found;
      }
      throw unshippedGate(classpath);
    };
    const maxBody = deps.config.limits.maxBodyBytes;
    return {
      routes: [
        {
          method: 'POST',
          path: '/authz/gates/discover',
          auth: 'admin',
          nativeOnly: true,
          doc: {
            summary: 'Describe a shipped gate by its classpath: its kind and settings',
            body: discoverBody,
            answers: { 200: gateDescriptionAnswer },
            errors: ['classpath_unimportable', 'classpath_not_allowed'],
          },
          async handle(ctx) {
            const { classpath } = await readJson(ctx.req, maxBody, discoverBody);
            return { status: 200, body: discover(classpath) };
          },
        },
      ],
    };
  },
};
