/**
 * A single-node Apache Kafka for one test (docs/test-peers.md): the official broker
 * jars from Maven Central (scripts/peers/kafka.sh), run by Java 17 as one
 * KRaft process that is both broker and controller. Storage is formatted in a
 * temp dir with a random cluster id; the broker listener binds port 0 and the
 * port it got is read from the log; the controller port is random and retried
 * when taken. PLAINTEXT on 127.0.0.1, topics auto-created. Stopped and deleted
 * in t.after.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type After, peerScript, peerWorkspace, randomPort, spawnPeer, withPortRetry } from './process.ts';

const execFileAsync = promisify(execFile);

export interface KafkaPeer {
  /** host:port of the broker, e.g. "127.0.0.1:41943" */
  bootstrapServers: string;
  /** Stops the broker now (e.g. "the source goes away mid-stream"); t.after also calls it. */
  stop(): Promise<void>;
}

export interface KafkaOptions {
  /** Partitions of auto-created topics (default 1). */
  partitions?: number;
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
  const broker = await withPortRetry(async () => {
    const controllerPort = randomPort();
    const properties = join(dir, 'server.properties');
    const data = join(dir, `data-${controllerPort}`);
    writeFileSync(properties, serverProperties(controllerPort, data, options.partitions ?? 1));
    // One token: a base64url id may start with '-', which the tool's parser would read as an option.
    await execFileAsync('java', java('kafka.tools.StorageTool', ['format', `--cluster-id=${clusterId}`, '-c', properties])).catch((error) => {
      throw new Error(`test peer kafka: storage format failed: ${error.stdout}${error.stderr || error.message}`);
    });
    const server = workspace.adopt(
      await spawnPeer('kafka', 'java', java('kafka.Kafka', [properties]), {
        ready: /Kafka Server started/,
        portInUse: /Address already in use|failed to bind/i,
        timeoutMs: 60_000,
      }),
    );
    const bound = [...server.output.matchAll(/Awaiting socket connections on 127\.0\.0\.1:(\d+)/g)].map((m) => Number(m[1]));
    const port = bound.find((p) => p !== controllerPort);
    if (!port) throw new Error(`test peer kafka: broker port not found in its log:\n${server.output}`);
    return port;
  });
  return { bootstrapServers: `127.0.0.1:${broker}`, stop };
}

function serverProperties(controllerPort: number, dataDir: string, partitions: number): string {
  return `${[
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:${controllerPort}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
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
