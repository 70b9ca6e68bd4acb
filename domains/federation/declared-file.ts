/**
 * The declared federation file (`meshgate federation apply <file>`, or `federation.declaredFile` at start): the
 * peers this cluster should be paired with, read into the resolved set the apply API takes. PSKs are read here, from
 * a file or an environment variable each, or derived per pair from one fleet key, never written in the file itself.
 *
 * A fleet of N clusters shares one file: `fleet.members` lists every cluster, `cluster` (or the cluster name) says
 * which one reads it, and each other member becomes a peer. Of each pair the member whose name sorts first is the
 * initiator; the PSK of a pair is HMAC-SHA256(fleet key, the two names in order), so both sides derive the same one
 * and no two pairs share one. Anyone holding the fleet key can derive every pair's PSK, so it stays with the operator:
 * a gateway reading its file at start takes listed peers only (each its own PSK), never a fleet.
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { recipeSchema } from './recipe.ts';

const name = z.string().trim().min(1).max(128);
const allowlist = z.array(z.object({ external_id: z.string().min(3).max(512), initial_tuples: recipeSchema }));
const identity = {
  shared_issuer_url: z.url({ protocol: /^https?$/ }).nullish(),
  identity_mode: z.enum(['shared_idp', 'peer_kc']).nullish(),
  allowlist: allowlist.optional(),
};

const peerEntry = z.strictObject({
  name,
  role: z.enum(['initiator', 'receiver']),
  /** Initiator: the peer's address (ip or name, optional :port); a receiver learns it at pairing. */
  address: z.string().trim().min(1).max(300).optional(),
  hostname: z.string().trim().max(253).nullish(),
  psk_file: z.string().min(1).optional(),
  psk_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
    .optional(),
  ...identity,
});

const member = z.strictObject({
  name,
  address: z.string().trim().min(1).max(300),
  hostname: z.string().trim().max(253).nullish(),
});

export const declaredFileSchema = z.strictObject({
  /** This cluster's member name in `fleet` (default: the configured cluster name). */
  cluster: name.optional(),
  /** The address peers call this cluster back on (sent at pairing); a fleet member's own address otherwise. */
  callback: z.string().trim().min(1).max(300).optional(),
  defaults: z.strictObject(identity).optional(),
  fleet: z.strictObject({ psk_file: z.string().min(1), members: z.array(member).min(1).max(10_000) }).optional(),
  peers: z.array(peerEntry).max(10_000).optional(),
});

/** One peer as the apply API takes it: everything resolved, the PSK included. */
export const declaredPeer = z.strictObject({
  name,
  role: z.enum(['initiator', 'receiver']),
  address: z.string().trim().min(1).max(300).nullish(),
  hostname: z.string().trim().max(253).nullish(),
  callback: z.string().trim().min(1).max(300).nullish(),
  preshared_key: z.string().min(16).max(1024),
  shared_issuer_url: z.url({ protocol: /^https?$/ }).nullish(),
  identity_mode: z.enum(['shared_idp', 'peer_kc']).nullish(),
  allowlist: allowlist.default([]),
});

export type DeclaredPeer = z.output<typeof declaredPeer>;

export class DeclaredFileError extends Error {
  override name = 'DeclaredFileError';
}

/** The PSK of the pair {a, b} under the fleet key: the same on both sides, distinct for every pair. */
export function fleetPsk(fleetKey: string, a: string, b: string): string {
  const [first = '', second = ''] = [a, b].sort();
  // Each name length-prefixed: no two pairs of names (one holding a separator the other splits at) give one input.
  const input = `meshgate fleet pair ${first.length}:${first}${second.length}:${second}`;
  return createHmac('sha256', fleetKey).update(input).digest('hex');
}

function readSecret(path: string, base: string): string {
  try {
    return readFileSync(resolve(base, path), 'utf8').trim();
  } catch (error) {
    throw new DeclaredFileError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

type DeclaredFile = z.output<typeof declaredFileSchema>;

function parseFile(file: string): DeclaredFile {
  try {
    return declaredFileSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch (error) {
    const message = error instanceof z.ZodError ? z.prettifyError(error) : (error as Error).message;
    throw new DeclaredFileError(`${file}: ${message}`);
  }
}

/** Every other fleet member as a peer of this one. */
function fleetPeers(file: string, parsed: DeclaredFile, fleet: NonNullable<DeclaredFile['fleet']>, self: string) {
  const me = fleet.members.find((m) => m.name === self);
  if (!me) throw new DeclaredFileError(`${file}: this cluster (${self}) is not a fleet member; set "cluster"`);
  const key = readSecret(fleet.psk_file, dirname(resolve(file)));
  if (key.length < 32) throw new DeclaredFileError(`${file}: the fleet key must be at least 32 characters`);
  const defaults = parsed.defaults ?? {};
  return fleet.members
    .filter((m) => m.name !== self)
    .map((m): DeclaredPeer => {
      const initiator = self < m.name;
      return {
        ...defaults,
        allowlist: defaults.allowlist ?? [],
        name: m.name,
        role: initiator ? 'initiator' : 'receiver',
        address: initiator ? m.address : null,
        hostname: initiator ? (m.hostname ?? null) : null,
        callback: parsed.callback ?? me.address,
        preshared_key: fleetPsk(key, self, m.name),
      };
    });
}

function listedPeer(file: string, parsed: DeclaredFile, entry: z.output<typeof peerEntry>, env: NodeJS.ProcessEnv) {
  const { psk_file: pskFile, psk_env: pskEnv, ...rest } = entry;
  const psk = pskFile ? readSecret(pskFile, dirname(resolve(file))) : pskEnv ? env[pskEnv] : undefined;
  if (!psk || psk.length < 16)
    throw new DeclaredFileError(`${file}: peer ${entry.name}: give a PSK of 16+ characters by psk_file or psk_env`);
  const defaults = parsed.defaults ?? {};
  return {
    ...defaults,
    ...rest,
    allowlist: entry.allowlist ?? defaults.allowlist ?? [],
    callback: parsed.callback ?? null,
    preshared_key: psk,
  };
}

/**
 * Reads `file` into the resolved peer set. `clusterName` picks this cluster among fleet members when the file does
 * not name it; `env` is where `psk_env` is looked up.
 */
export function readDeclaredFile(
  file: string,
  clusterName: string,
  env: NodeJS.ProcessEnv,
  { fleetKey = true }: { fleetKey?: boolean } = {},
): DeclaredPeer[] {
  const parsed = parseFile(file);
  if (parsed.fleet && !fleetKey) {
    throw new DeclaredFileError(
      `${file}: a fleet file is applied by the operator (meshgate federation apply), not read by a gateway at start: ` +
        "the fleet key derives every pair's PSK, so a gateway holding it could act as any member toward any other",
    );
  }
  const peers = [
    ...(parsed.fleet ? fleetPeers(file, parsed, parsed.fleet, parsed.cluster ?? clusterName) : []),
    ...(parsed.peers ?? []).map((entry) => listedPeer(file, parsed, entry, env)),
  ];
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const p of peers) (seen.has(p.name) ? twice : seen).add(p.name);
  if (twice.size > 0) throw new DeclaredFileError(`${file}: peer names given twice: ${[...twice].join(', ')}`);
  return peers;
}
