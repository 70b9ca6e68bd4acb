/**
 * A real HiveServer2 for a test file (docs/test-peers.md; docs/sources.md
 * "HiveServer2 test peer"): Apache Hive 4.0.1 from Maven Central jars
 * (scripts/peers/hive.sh) on Java 17, embedded Derby metastore, local file
 * system, binary Thrift transport without SASL (by default) on 127.0.0.1 (random port,
 * retried when taken). Hive 4.0 targets Java 8, so the JVM gets the
 * --add-opens its reflection needs. It is heavy (a JVM of ~1 GB, 20-40 s to
 * start on two busy cores): start one per test file and share it. `query`
 * runs HiveQL through hive-driver, e.g. to create external tables over files
 * written to `dataDir`. With `tls` the Thrift port speaks only TLS
 * (`hive.server2.use.SSL`, a PKCS#12 key store made from the certificate),
 * and `query` connects over TLS trusting `tls.caPem`. With `users` it checks
 * passwords (CUSTOM authentication), and with `http` it serves Thrift over
 * HTTP(S) too. Stopped and deleted in t.after.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import hive from 'hive-driver';
import { type KeyStore, pkcs12KeyStore, type ServerTls } from './keystore.ts';
import { type After, peerScript, peerWorkspace, randomPort, spawnPeer, withPortRetry } from './process.ts';

export interface HivePeer {
  host: string;
  /** The binary Thrift port. */
  port: number;
  /** With `http`: the port serving Thrift over HTTP (HTTPS with `tls`) at `/cliservice`. */
  httpPort?: number;
  /** A folder Hive can read: write CSV/Parquet files here and CREATE EXTERNAL TABLE ... LOCATION 'file://<dir>'. */
  dataDir: string;
  /** Runs one HiveQL statement through hive-driver (binary, as the first of `users` if any) and returns its rows. */
  query(sql: string): Promise<Record<string, unknown>[]>;
  /** Stops the server now (e.g. "the source goes away mid-stream"); t.after also calls it. */
  stop(): Promise<void>;
}

export interface HiveOptions {
  /** Serve TLS only, with this certificate (its names must include localhost: `query` checks it by that name). */
  tls?: ServerTls & { caPem: string };
  /**
   * Check passwords: CUSTOM authentication (SASL PLAIN on the binary port, Basic on HTTP) accepting
   * exactly these users, user → password (scripts/peers/hive-auth/PeerPasswords.java). Default NOSASL.
   */
  users?: Readonly<Record<string, string>>;
  /** Serve Thrift over HTTP too, on `httpPort` (`hive.server2.transport.mode=all`). */
  http?: boolean;
}

const OPENS = [
  'java.base/java.lang',
  'java.base/java.lang.invoke',
  'java.base/java.lang.reflect',
  'java.base/java.io',
  'java.base/java.math',
  'java.base/java.net',
  'java.base/java.nio',
  'java.base/java.text',
  'java.base/java.time',
  'java.base/java.util',
  'java.base/java.util.concurrent',
  'java.base/java.util.concurrent.atomic',
  'java.base/java.util.jar',
  'java.base/java.util.regex',
  'java.base/jdk.internal.misc',
  'java.base/sun.nio.ch',
  'java.base/sun.security.action',
  'java.sql/java.sql',
].map((m) => `--add-opens=${m}=ALL-UNNAMED`);

// Quiet except for the line that says the Thrift port is open.
const LOG4J2 = `status = WARN
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d %p %c{1} %m%n
rootLogger.level = WARN
rootLogger.appenderRef.console.ref = console
logger.thrift.name = org.apache.hive.service.cli.thrift.ThriftCLIService
logger.thrift.level = INFO
logger.thrifthttp.name = org.apache.hive.service.cli.thrift.ThriftHttpCLIService
logger.thrifthttp.level = INFO
logger.datanucleus.name = DataNucleus
logger.datanucleus.level = ERROR
logger.metastore.name = org.apache.hadoop.hive.metastore
logger.metastore.level = OFF
`;

export async function startHive(t: After, options: HiveOptions = {}): Promise<HivePeer> {
  const lib = await peerScript('hive');
  const workspace = peerWorkspace(t, 'hive');
  const { dir, stop } = workspace;
  const conf = join(dir, 'conf');
  const dataDir = join(dir, 'data');
  for (const d of [conf, dataDir, join(dir, 'warehouse'), join(dir, 'scratch')]) mkdirSync(d, { recursive: true });
  writeFileSync(join(conf, 'hive-log4j2.properties'), LOG4J2);
  const keyStore = options.tls ? await pkcs12KeyStore(dir, options.tls) : undefined;
  const ports = await withPortRetry(async () => {
    const candidate = { port: randomPort(), httpPort: options.http ? randomPort() : undefined };
    writeFileSync(join(conf, 'hive-site.xml'), hiveSite(dir, candidate, options, keyStore));
    const args = [
      '-Xms128m',
      '-Xmx1g',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      ...workspace.jvmTempOptions,
      ...OPENS,
      `-Dderby.stream.error.file=${join(dir, 'derby.log')}`,
    ];
    workspace.adopt(
      await spawnPeer(
        'hive',
        'java',
        [...args, '-cp', `${conf}:${lib}/*`, 'org.apache.hive.service.server.HiveServer2'],
        {
          env: { ...process.env, HADOOP_HOME: dir, HADOOP_USER_NAME: 'meshgate' },
          ready: readyLine(candidate),
          portInUse: /Address already in use|Could not create ServerSocket|Failed to bind/,
          timeoutMs: 180_000,
        },
      ),
    );
    return candidate;
  });
  const host = '127.0.0.1';
  // Over TLS the certificate is checked by the name it carries, localhost, on the address the server binds.
  const tls = options.tls
    ? { ssl: true, ca: options.tls.caPem, servername: 'localhost', rejectUnauthorized: true }
    : {};
  const [user, password] = Object.entries(options.users ?? {})[0] ?? [];
  const auth =
    user === undefined
      ? new hive.auth.NoSaslAuthentication()
      : new hive.auth.PlainTcpAuthentication({ username: user, password });
  return {
    host,
    ...ports,
    dataDir,
    stop,
    query: (sql) => hiveQuery({ host, port: ports.port, options: tls }, auth, sql),
  };
}

/** An external text table `name` (`columns` as HiveQL) over one CSV file of `lines` in the peer's data folder. */
export async function csvTable(peer: HivePeer, name: string, columns: string, lines: readonly string[]): Promise<void> {
  const dir = join(peer.dataDir, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'rows.csv'), `${lines.join('\n')}\n`);
  await peer.query(
    `CREATE EXTERNAL TABLE ${name} (${columns}) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' ` +
      `STORED AS TEXTFILE LOCATION 'file://${dir}'`,
  );
}

/** Both transports log their start; with `all` the server serves once both have. */
function readyLine(ports: { port: number; httpPort?: number }): RegExp {
  const binary = `(?=[\\s\\S]*Starting ThriftBinaryCLIService on port ${ports.port}\\b)`;
  const http = ports.httpPort
    ? `(?=[\\s\\S]*Started ThriftHttpCLIService in \\w+ mode on port ${ports.httpPort}\\b)`
    : '';
  return new RegExp(`^${binary}${http}`);
}

type Connect = Parameters<InstanceType<typeof hive.HiveClient>['connect']>[0];
type Authentication = Parameters<InstanceType<typeof hive.HiveClient>['connect']>[2];

async function hiveQuery(target: Connect, auth: Authentication, sql: string): Promise<Record<string, unknown>[]> {
  const { TCLIService, TCLIService_types } = hive.thrift;
  const client = await new hive.HiveClient(TCLIService, TCLIService_types).connect(
    target,
    new hive.connections.TcpConnection(),
    auth,
  );
  try {
    const session = await client.openSession({
      client_protocol: TCLIService_types.TProtocolVersion.HIVE_CLI_SERVICE_PROTOCOL_V10,
    });
    const operation = await session.executeStatement(sql, { runAsync: true });
    const utils = new hive.HiveUtils(TCLIService_types);
    await utils.waitUntilReady(operation, false, () => {});
    await utils.fetchAll(operation);
    const rows = utils.getResult(operation).getValue() as Record<string, unknown>[] | null;
    await operation.close();
    await session.close();
    return rows ?? [];
  } finally {
    await client.close();
  }
}

/** HiveServer2's TLS settings ("Setting Up HiveServer2", SSL Encryption). */
function tlsSite(keyStore: KeyStore | undefined): Record<string, string> {
  if (!keyStore) return {};
  return {
    'hive.server2.use.SSL': 'true',
    'hive.server2.keystore.path': keyStore.path,
    'hive.server2.keystore.password': keyStore.password,
    'hive.server2.keystore.type': 'PKCS12',
  };
}

/**
 * CUSTOM authentication with the peer's own password check, and the HTTP transport
 * ("Setting Up HiveServer2": Pluggable Authentication Modules, Running in HTTP Mode).
 */
function authSite(ports: { httpPort?: number }, options: HiveOptions): Record<string, string> {
  const users = Object.entries(options.users ?? {});
  return {
    'hive.server2.transport.mode': ports.httpPort ? 'all' : 'binary',
    ...(ports.httpPort
      ? { 'hive.server2.thrift.http.port': String(ports.httpPort), 'hive.server2.thrift.http.path': 'cliservice' }
      : {}),
    ...(users.length > 0
      ? {
          'hive.server2.authentication': 'CUSTOM',
          'hive.server2.custom.authentication.class': 'meshgate.peers.PeerPasswords',
          'meshgate.peer.users': users.map(([user, password]) => `${user}:${password}`).join(','),
        }
      : { 'hive.server2.authentication': 'NOSASL' }),
  };
}

function hiveSite(
  dir: string,
  ports: { port: number; httpPort?: number },
  options: HiveOptions,
  keyStore: KeyStore | undefined,
): string {
  const properties: Record<string, string> = {
    'hive.metastore.uris': '',
    'javax.jdo.option.ConnectionURL': `jdbc:derby:;databaseName=${join(dir, 'metastore_db')};create=true`,
    'javax.jdo.option.ConnectionDriverName': 'org.apache.derby.jdbc.EmbeddedDriver',
    'hive.metastore.schema.verification': 'false',
    'datanucleus.schema.autoCreateAll': 'true',
    'hive.metastore.warehouse.dir': `file://${join(dir, 'warehouse')}`,
    'hive.exec.scratchdir': join(dir, 'scratch'),
    'hive.exec.local.scratchdir': join(dir, 'scratch'),
    'hive.querylog.location': join(dir, 'scratch'),
    'hive.server2.logging.operation.log.location': join(dir, 'scratch', 'operation_logs'),
    // Defaults under /tmp shared by every HiveServer2 on the machine (/tmp/hive, /tmp/hadoop-<user>).
    'hive.query.results.cache.directory': join(dir, 'scratch', 'results_cache'),
    'hadoop.tmp.dir': join(dir, 'hadoop-tmp'),
    'mapreduce.jobtracker.staging.root.dir': join(dir, 'hadoop-tmp', 'staging'),
    'hive.server2.thrift.port': String(ports.port),
    'hive.server2.thrift.bind.host': '127.0.0.1',
    'hive.server2.enable.doAs': 'false',
    'hive.server2.webui.port': '0', // no web UI
    'hive.server2.max.start.attempts': '1',
    'hive.execution.engine': 'mr',
    'fs.defaultFS': 'file:///',
    'mapreduce.framework.name': 'local',
    'hive.fetch.task.conversion': 'more',
    'hive.stats.autogather': 'false',
    ...authSite(ports, options),
    ...tlsSite(keyStore),
  };
  const body = Object.entries(properties)
    .map(([name, value]) => `  <property><name>${name}</name><value>${value}</value></property>`)
    .join('\n');
  return `<?xml version="1.0"?>\n<configuration>\n${body}\n</configuration>\n`;
}
