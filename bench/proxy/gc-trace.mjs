/**
 * Preloaded into a Node.js process under measurement (`NODE_OPTIONS=--import=<this file>`, which its workers inherit)
 * by bench/proxy/workers.ts: turns on V8's GC tracing in name=value form (`--trace-gc-nvp`, a V8 flag that
 * NODE_OPTIONS does not accept itself), so the process writes to its stdout, at every collection, the bytes allocated
 * on V8's heap since the one before (`allocated=`). Summed over a measured run, that is what the run allocated
 * (gcAllocatedBytes in peers.ts). Nothing of the product changes: the flag is V8's own, set from outside.
 */
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--trace-gc-nvp');
