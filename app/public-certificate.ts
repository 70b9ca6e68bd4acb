/**
 * The public listener's certificate while the gateway runs (gateway/tls/serving-certificate.ts holds it, every
 * HTTPS listener of a process takes its replacements). Where replacements come from:
 *
 * - the operator's files (tlsCertFile/tlsKeyFile) changed on disk, or SIGHUP: each process reads them again;
 * - ACME (`tls.acme`): the owner (one process, or the primary) orders and renews (gateway/tls/acme/), binds the
 *   HTTP-01 listener, and hands each new certificate and each pending TLS-ALPN-01 challenge to its workers over the
 *   owner link, waiting until every worker has it before the CA is told to validate;
 * - on PostgreSQL, another node's order (gateway/tls/acme/cluster.ts): the owner hears of it on the change feed,
 *   writes it into the data dir, serves it and hands it to its workers; it answers the challenges that node has
 *   pending too, since the CA may validate against any node behind the name.
 *
 * The platform CA's certificate is the default and stays what the mesh pins: only this listener's changes.
 */
import { X509Certificate } from 'node:crypto';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { CLUSTER_FILES_TOPIC } from '../gateway/cluster/identity.ts';
import type { Config } from '../gateway/config/schema.ts';
import type { ChangeFeed } from '../gateway/db/change-feed.ts';
import type { GatewayMetrics } from '../gateway/observability/metrics.ts';
import { ownerNotice, type ProcessPlace } from '../gateway/process/link.ts';
import { type AcmeCluster, CHALLENGES_FILE, ORDER_FILES, SharedChallenges } from '../gateway/tls/acme/cluster.ts';
import { createHttp01Listener, Http01Tokens } from '../gateway/tls/acme/http-challenge.ts';
import type { ChallengeResponder, PendingChallenge } from '../gateway/tls/acme/order.ts';
import { ORDER_DEADLINE_MS, RenewalLoop, servableStored } from '../gateway/tls/acme/renewal.ts';
import { AcmeStore, certificateNames } from '../gateway/tls/acme/store.ts';
import { watchOperatorFiles } from '../gateway/tls/operator-files.ts';
import type { ServerKeyPair, ServingCertificate } from '../gateway/tls/serving-certificate.ts';
import { listen } from './listeners.ts';

/** Primary → workers: serve this certificate from now on. */
const CERTIFICATE_ISSUED = ownerNotice<ServerKeyPair>('tls.certificateIssued');
/** Primary → workers: answer (pair) or stop answering (null) TLS-ALPN-01 for this name. */
const ALPN_CHALLENGE = ownerNotice<{ name: string; pair: ServerKeyPair | null }>('tls.alpnChallenge');

/** The names ordered: the deployment domain, then the extra names. */
export function acmeNames(config: Readonly<Config>): string[] {
  return [...new Set([config.hostnames[0] as string, ...config.tls.acme.names].map((n) => n.toLowerCase()))];
}

/**
 * What the listener starts with: the stored ACME certificate while it is valid and covers the deployment domain
 * (though the names or the directory changed and a new one is being ordered), else the material.
 */
export function initialPair(config: Readonly<Config>, material: ServerKeyPair, now = new Date()): ServerKeyPair {
  if (config.tls.acme.directoryUrl === null) return material;
  return servableStored(new AcmeStore(config.dataDir), config.hostnames[0] as string, now) ?? material;
}

export interface CertificateSources {
  readonly config: Readonly<Config>;
  readonly certificate: ServingCertificate;
  readonly place: ProcessPlace;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly origin: () => string;
  /** On PostgreSQL: the ACME part of the cluster identity (app/cluster-identity.ts). */
  readonly cluster?: AcmeCluster;
}

/** How long an ordering node waits for every live node to answer a challenge before the CA validates. */
const RECEIPTS_WITHIN_MS = 10_000;

export interface RunningSources {
  /**
   * The listeners serve (a primary's: its workers): ACME may order now. Before, a TLS-ALPN-01 validation would
   * find no listener, and a failed first order waits out the backoff.
   */
  serving(): void;
  /** On PostgreSQL: from now on, takes the ACME state and challenges other nodes publish (the change feed). */
  follow(feed: ChangeFeed): void;
  stop(): Promise<void>;
}

/** Starts whatever may replace the certificate in this process. */
export async function startCertificateSources(sources: CertificateSources): Promise<RunningSources> {
  const { config, certificate, logger, place } = sources;
  const stops: (() => void | Promise<void>)[] = [];
  let serving = () => {};
  let follow = (_feed: ChangeFeed) => {};
  observeExpiry(sources);
  if (config.tlsCertFile !== null && config.tlsKeyFile !== null) {
    const files = { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile };
    const watcher = watchOperatorFiles(
      files,
      (material) => {
        certificate.replace(material);
        // Each process reads the files itself: its pid tells the operator which have.
        const fields = { serial: certificate.serial, notAfter: material.certificate.validTo, pid: process.pid };
        logger.info(fields, 'certificate files reloaded');
      },
      (problems) =>
        logger.warn({ problems }, 'certificate files changed but are not usable; serving the previous pair'),
      (dir, error) =>
        logger.error({ dir, err: error.message }, 'certificate folder no longer watched; SIGHUP or a restart rereads'),
    );
    stops.push(() => watcher.close());
    if (place.role === 'single') {
      process.on('SIGHUP', watcher.reread);
      stops.push(() => {
        process.off('SIGHUP', watcher.reread);
      });
    }
  }
  if (config.tls.acme.directoryUrl !== null) {
    if (place.role === 'worker') {
      stops.push(place.listen(CERTIFICATE_ISSUED, (pair) => certificate.replace(pair)));
      stops.push(place.listen(ALPN_CHALLENGE, ({ name, pair }) => certificate.setChallenge(name, pair)));
    } else {
      const acme = await startAcme(sources);
      stops.push(acme.stop);
      serving = acme.begin;
      follow = acme.follow;
    }
  }
  return {
    serving: () => serving(),
    follow: (feed) => follow(feed),
    async stop() {
      for (const stop of stops) await stop();
    },
  };
}

/** The owner's side of ACME: the HTTP-01 listener, the responder, the renewal loop. */
async function startAcme({ config, certificate, place, logger, metrics, origin, cluster }: CertificateSources) {
  const settings = config.tls.acme;
  const store = new AcmeStore(config.dataDir, (error) =>
    logger.error({ dir: store.dir, err: error.message }, 'ACME status.json is corrupt; read as empty'),
  );
  const tokens = new Http01Tokens();
  let http01: Server | null = null;
  if (settings.challenges.includes('http-01') && settings.httpPort !== null) {
    http01 = createHttp01Listener(tokens, origin, config.limits);
    const port = await listen(http01, settings.httpPort, config.bind);
    logger.info({ port }, 'ACME HTTP-01 listener');
  }
  const toWorkers = async <T>(notice: typeof CERTIFICATE_ISSUED | typeof ALPN_CHALLENGE, payload: T) => {
    if (place.role === 'primary') await place.notify(notice as never, payload as never);
  };
  const alpn = async (name: string, pair: ServerKeyPair | null) => {
    certificate.setChallenge(name, pair);
    await toWorkers(ALPN_CHALLENGE, { name, pair });
  };
  const local: ChallengeResponder = {
    async present(challenge: PendingChallenge) {
      if (challenge.type === 'http-01') tokens.set(challenge.token, challenge.keyAuthorization);
      else await alpn(challenge.name, challenge.pair);
    },
    async withdraw(challenge: PendingChallenge) {
      if (challenge.type === 'http-01') tokens.delete(challenge.token);
      else await alpn(challenge.name, null);
    },
  };
  const names = acmeNames(config);
  const shared = cluster
    ? new SharedChallenges({
        dir: store.dir,
        cluster,
        local,
        names,
        logger,
        receiptsWithinMs: RECEIPTS_WITHIN_MS,
        alpnChallenge: async ({ name, keyAuthorization }) =>
          (await import('../gateway/tls/acme/order.ts')).alpnChallengeFor(name, keyAuthorization),
      })
    : null;
  const responder = shared ?? local;
  const failures = metrics.counter({
    name: 'certificate_renewal_failures_total',
    help: 'ACME orders and renewals that failed (the certificate in use kept serving).',
    labels: [],
  });
  // A client per attempt: a CA that lost its state (a reset test CA, an account deactivated) is met afresh.
  const openSession = async () => {
    const { createAccountKey, openAcmeSession } = await import('../gateway/tls/acme/order.ts');
    return openAcmeSession(settings, await store.accountKey(createAccountKey), responder);
  };
  const loop = new RenewalLoop({
    names,
    directoryUrl: settings.directoryUrl as string,
    store,
    session: openSession,
    retryMinMs: settings.retryMinSeconds * 1000,
    orderDeadlineMs: ORDER_DEADLINE_MS,
    logger,
    now: () => new Date(),
    async onIssued(pair) {
      certificate.replace(pair);
      await toWorkers(CERTIFICATE_ISSUED, pair);
    },
    onFailure: () => failures.inc(),
    ...(cluster ? { cluster } : {}),
  });
  const orderPaths = new Set(ORDER_FILES.map((file) => cluster?.pathOf(file)));
  return {
    begin: () => loop.start(),
    follow(feed: ChangeFeed) {
      if (!cluster || !shared) return;
      const failed = (path: string) => (error: unknown) =>
        logger.error({ path, err: (error as Error).message }, 'ACME state another node published not taken');
      // Challenges another node had pending when this one started (its start pulled them) are answered now.
      shared.sync().catch(failed(cluster.pathOf(CHALLENGES_FILE)));
      feed.subscribe(CLUSTER_FILES_TOPIC, (path) => {
        const challenges = path === cluster.pathOf(CHALLENGES_FILE);
        if (!challenges && !orderPaths.has(path)) return;
        // Each takes the files it reads itself (the identity's own subscriber leaves the ACME folder alone), and
        // the loop not while its own outcome is unpublished.
        (challenges ? shared.sync() : loop.adopt()).catch(failed(path));
      });
    },
    stop: async () => {
      await loop.close();
      // Nothing on it outlives a request worth waiting for: a validation, or a redirect.
      http01?.closeAllConnections();
      http01?.close();
    },
  };
}

/** The expiry of the certificate new handshakes get, per name it covers; the owner's process reports it. */
function observeExpiry({ certificate, metrics }: CertificateSources): void {
  metrics.gauge({
    name: 'certificate_expiry_timestamp_seconds',
    help: "The public listener's certificate: when it expires (Unix seconds), per name it covers.",
    labels: ['name'],
    across: 'first',
    collect(gauge) {
      gauge.reset();
      const served = new X509Certificate(certificate.current.certPem);
      for (const name of certificateNames(served)) gauge.labels(name).set(served.validToDate.getTime() / 1000);
    },
  });
}
