/**
 * A secret that vanishes between a job's creation (the catalog's check) and the connector's read: every
 * connector lets the catalog's 409 `secret_unavailable` through unchanged — not a 400/422 that reads like
 * bad options — and names the URN as written, never the bound form carrying the secret's internal id.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hiveSources } from '../../../../../domains/retrieval/sources/hive/source.ts';
import { pgCredentials } from '../../../../../domains/retrieval/sources/postgres/connection.ts';
import { pgTls } from '../../../../../domains/retrieval/sources/postgres/tls.ts';
import { s3Config } from '../../../../../domains/retrieval/sources/s3/store.ts';
import { slackSources } from '../../../../../domains/retrieval/sources/slack/source.ts';
import type { SourceInput } from '../../../../../domains/retrieval/sources/types.ts';
import { ApiError } from '../../../../../gateway/errors/api-error.ts';
import { createDataset, datasetService, secretsAccess } from '../../../../helpers/catalog.ts';
import { localPrincipal } from '../../../../helpers/deployments.ts';
import { startTestGateway } from '../../../../helpers/gateway.ts';

test(
  'a secret deleted after the use check stays 409 secret_unavailable in ' + 'every connector, naming the URN only',
  async (t) => {
    const gw = await startTestGateway(t);
    const bob = await gw.userToken('bob');
    const secret = await gw.request('POST', '/api/catalog/secrets/', {
      token: bob.token,
      json: { name: 'gone-soon', value: '{"user":"u","password":"p"}' },
    });
    const urn = secret.json as string;
    const properties = {
      host: '127.0.0.1',
      port: 5432,
      sslmode: 'verify-full',
      sslrootcert: urn,
      secret_urn: urn,
      api_url: 'http://127.0.0.1:1/api/',
      channels: ['c'],
      auth: 'PLAIN',
    };
    const dataset = await createDataset(gw, bob.token, { name: 'd', platform: 'postgres', properties });
    // What a connector holds once the job was created: the properties with each reference in its bound form.
    const bound = datasetService(gw).forUse(localPrincipal(bob.id), dataset).properties;
    assert.notEqual(bound.secret_urn, urn, 'control: the connector sees the bound form');
    assert.equal((await gw.request('DELETE', `/api/catalog/secrets/v2/${urn}`, { token: bob.token })).status, 204);
    const input = {
      urn: dataset,
      platform: 'postgres',
      name: 'd',
      properties: bound,
      options: {},
      credentialOverride: null,
      formatHint: null,
    } as unknown as SourceInput;
    const secrets = secretsAccess(gw);
    const reads: [string, () => unknown][] = [
      ['postgres', () => pgCredentials(input, secrets)],
      ['postgres tls', () => pgTls(bound, secrets)],
      ['s3', () => s3Config(input, secrets)],
      ['hive', () => hiveSources([], () => secrets).create({ ...input, platform: 'hive' })],
      ['slack', () => slackSources(() => secrets).create({ ...input, platform: 'slack' })],
    ];
    for (const [source, read] of reads) {
      await assert.rejects(
        async () => read(),
        (error: unknown) =>
          error instanceof ApiError &&
          error.status === 409 &&
          error.reason === 'secret_unavailable' &&
          JSON.stringify(error.extra) === JSON.stringify({ secret_urn: urn }),
        source,
      );
    }
  },
);
