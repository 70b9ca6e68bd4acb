import { defineErrors } from '../../gateway/errors/api-error.ts';

export const RoutingErrors = defineErrors('routing', {
  routing_config_invalid: {
    status: 422,
    doc:
      'A routing PATCH would produce an invalid table (a prefix overlapping another, or taking the gateway’s own ' +
      '`/login`, `/logout` or `/console`, …); `problems` lists every problem and nothing is applied.',
  },
  database_unavailable: {
    status: 503,
    doc: 'GET /api/ready: the database did not answer a query (closed, unreadable, corrupt); the log says why.',
  },
});
