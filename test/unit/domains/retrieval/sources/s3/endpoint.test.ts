/**
 * Which endpoint a job's credential_override may send the gateway to: the dataset's own endpoint exactly (scheme,
 * host, port and path), or a host the operator listed; never a plaintext port, another path or a URL carrying
 * credentials of the same host. Refused before any client exists.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { s3Config } from '../../../../../../domains/retrieval/sources/s3/store.ts';
import type { SourceInput } from '../../../../../../domains/retrieval/sources/types.ts';

const OWN = 'https://minio.corp';

function input(endpoint: string): SourceInput {
  const credentialOverride = JSON.stringify({ endpoint, aws_access_key_id: 'AK', aws_secret_access_key: 'SK' });
  const properties = { endpoint: OWN, anonymous: true };
  return {
    urn: 'u',
    platform: 's3',
    name: 'b/k',
    properties,
    options: {},
    credentialOverride,
    formatHint: null,
    tag: 't',
  };
}

const reason = (error: unknown) => (error as { reason?: string }).reason;

test("the dataset's own endpoint, spelled another way, is its own", () => {
  for (const same of ['https://minio.corp', 'HTTPS://MINIO.CORP', 'https://minio.corp:443', 'https://minio.corp/'])
    assert.equal(s3Config(input(same), undefined).endpoint, same, same);
});

test('another scheme, port or path of the same host, or credentials in the URL, are not', () => {
  for (const other of [
    'http://minio.corp',
    'http://minio.corp:80',
    'https://minio.corp:8443',
    'https://minio.corp/other-prefix',
    'https://user@minio.corp',
    'https://user:pw@minio.corp',
    'https://evil.example',
  ]) {
    assert.throws(
      () => s3Config(input(other), undefined),
      (error) => ['endpoint_not_allowed', 'dataset_location_missing'].includes(reason(error) ?? ''),
      other,
    );
  }
});

test("a host the operator listed is allowed, on any of that host's schemes; an unlisted port is not", () => {
  assert.equal(
    s3Config(input('http://s3.partner:9000'), undefined, ['s3.partner:9000']).endpoint,
    'http://s3.partner:9000',
  );
  assert.throws(() => s3Config(input('http://s3.partner:9001'), undefined, ['s3.partner:9000']), /endpoint/);
});
