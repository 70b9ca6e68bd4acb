/**
 * A single-node Apache Kafka for one test (docs/test-peers.md): the official broker
 * jars from Maven Central (scripts/peers/kafka.sh), run by Java 17 as one
 * KRaft process that is both broker and controller. Storage is formatted in a
 * temp dir with a random cluster id; the broker listener binds port 0 and the
 * port it got is read from the log; the controller port is random and retried
 * when taken. PLAINTEXT on 127.0.0.1, topics auto-created. With `tls`, two
 * more listeners on `localhost` (random ports, retried too): SSL, and
 * SASL_SSL taking PLAIN (users in the listener's JAAS) and SCRAM-SHA-256/512
 * (credentials written at storage format with the broker's own
 * `kafka-storage format --add-scram`). Stopped and deleted in t.after.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type KeyStore, pkcs12KeyStore, type ServerTls } from './keystore.ts';
import { type After, peerScript, peerWorkspace, randomPort, spawnPeer, withPortRetry } from './process.ts';

const execFileAsync = promisify(execFile);

export interface KafkaPeer {
  /** host:port of the broker's PLAINTEXT listener, e.g. "127.0.0.1:41943" */
  bootstrapServers: string;
  /** With `tls`: "localhost:<port>" of the SSL listener. */
  sslBootstrapServers?: string;
  /** With `tls`: "localhost:<port>" of the SASL_SSL listener (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512). */
  saslSslBootstrapServers?: string;
  /** Stops the broker now (e.g. "the source goes away mid-stream"); t.after also calls it. */
  stop(): Promise<void>;
}

export interface KafkaOptions {
  /** Partitions of auto-created topics (default 1). */
  partitions?: number;
  /** The TLS listeners' certificate chain and key (its names must include localhost to be reached by name). */
  tls?: ServerTls;
  /** SASL users (name → password), for every mechanism of the SASL_SSL listener; names and passwords alphanumeric. */
  users?: Readonly<Record<string, string>>;
}

const SCRAM = ['SCRAM-SHA-256', 'SCRAM-SHA-512'];
const JAAS_PACKAGE = 'org.apache.kafka.common.security';

interface Ports {
  controller: number;
  ssl: number;
  saslSsl: number;
}

// Quiet by default; the two INFO lines the helper waits for stay on.
const LOG4J2 = `<Configuration status="warn">
  <Appenders><Console name="out" target="SYSTEM_OUT"><PatternLayout pattern="%d %p %c{1} %m%n"/></Console></Appenders>
  <Loggers>
    <Logger name="kafka.server.KafkaRaftServer" level="info"/>
    <Logger name="kafka.network.DataPlaneAcceptor" level="info"/>
    <Root level="warn"><AppenderRef ref="out"/></Root>
  </Loggers>
</Configuration>
`;

export async function startKafka(t: After, options: KafkaOptions = {}): Promise<KafkaPeer> {
  const lib = await peerScript('kafka');
  const workspace = peerWorkspace(t, 'kafka');
  const { dir, stop } = workspace;
  writeFileSync(join(dir, 'log4j2.xml'), LOG4J2);
  const java = (mainClass: string, args: string[]) => [
    '-Xms64m',
    '-Xmx512m',
    '-XX:+UseSerialGC',
    ...workspace.jvmTempOptions,
    `-Dlog4j2.configurationFile=${join(dir, 'log4j2.xml')}`,
    '-cp',
    `${lib}/*`,
    mainClass,
    ...args,
  ];
  const clusterId = randomBytes(16).toString('base64url');
  const keyStore = options.tls ? await pkcs12KeyStore(dir, options.tls) : undefined;
  const users = Object.entries(options.users ?? {});
  const scramUser = ([name, secret]: [string, string]) =>
    SCRAM.map((m) => `--add-scram=${m}=[name=${name},password=${secret}]`);
  const scram = users.flatMap(scramUser);
  const ports: Ports = { controller: 0, ssl: 0, saslSsl: 0 };
  const broker = await withPortRetry(async () => {
    Object.assign(ports, { controller: randomPort(), ssl: randomPort(), saslSsl: randomPort() });
    const properties = join(dir, 'server.properties');
    const data = join(dir, `data-${ports.controller}`);
    writeFileSync(properties, serverProperties(ports, data, options.partitions ?? 1, { keyStore, users }));
    // One token: a base64url id may start with '-', which the tool's parser would read as an option.
    const format = ['format', `--cluster-id=${clusterId}`, '-c', properties, ...scram];
    await execFileAsync('java', java('kafka.tools.StorageTool', format)).catch((error) => {
      throw new Error(`test peer kafka: storage format failed: ${error.stdout}${error.stderr || error.message}`);
    });
    const server = workspace.adopt(
      await spawnPeer('kafka', 'java', java('kafka.Kafka', [properties]), {
        ready: /Kafka Server started/,
        portInUse: /Address already in use|failed to bind/i,
        timeoutMs: 60_000,
      }),
    );
    const bound = [...server.output.matchAll(/Awaiting socket connections on 127\.0\.0\.1:(\d+)/g)].map((m) =>
      Number(m[1]),
    );
    const port = bound.find((p) => p !== ports.controller && p !== ports.ssl && p !== ports.saslSsl);
    if (!port) throw new Error(`test peer kafka: broker port not found in its log:\n${server.output}`);
    return port;
  });
  const plaintext = { bootstrapServers: `127.0.0.1:${broker}`, stop };
  if (!keyStore) return plaintext;
  const sslBootstrapServers = `localhost:${ports.ssl}`;
  return { ...plaintext, sslBootstrapServers, saslSslBootstrapServers: `localhost:${ports.saslSsl}` };
}

/** The SSL and SASL_SSL listeners' settings (Kafka's "Encryption and Authentication using SSL" and "using SASL"). */
function securedListeners(ports: Ports, keyStore: KeyStore, users: readonly [string, string][]): string[] {
  const plainUsers = users.map(([name, password]) => ` user_${name}="${password}"`).join('');
  const jaas = (mechanism: string, module: string, extra = '') =>
    `listener.name.sasl_ssl.${mechanism.toLowerCase()}.sasl.jaas.config=${JAAS_PACKAGE}.${module} required${extra};`;
  const listeners = [
    'PLAINTEXT://127.0.0.1:0',
    `CONTROLLER://127.0.0.1:${ports.controller}`,
    `SSL://localhost:${ports.ssl}`,
    `SASL_SSL://localhost:${ports.saslSsl}`,
  ];
  return [
    `listeners=${listeners.join(',')}`,
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL',
    'ssl.keystore.type=PKCS12',
    `ssl.keystore.location=${keyStore.path}`,
    `ssl.keystore.password=${keyStore.password}`,
    `ssl.key.password=${keyStore.password}`,
    `sasl.enabled.mechanisms=PLAIN,${SCRAM.join(',')}`,
    jaas('PLAIN', 'plain.PlainLoginModule', plainUsers),
    ...SCRAM.map((m) => jaas(m, 'scram.ScramLoginModule')),
  ];
}

interface Security {
  keyStore: KeyStore | undefined;
  users: readonly [string, string][];
}

function serverProperties(ports: Ports, dataDir: string, partitions: number, { keyStore, users }: Security): string {
  const listeners = keyStore
    ? securedListeners(ports, keyStore, users)
    : [
        `listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:${ports.controller}`,
        'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      ];
  return `${[
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${ports.controller}`,
    ...listeners,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    `log.dirs=${dataDir}`,
    `num.partitions=${partitions}`,
    'auto.create.topics.enable=true',
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
  ].join('\n')}\n`;
}
