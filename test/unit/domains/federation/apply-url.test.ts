/** Which gateway URLs `meshgate federation apply` and `pair` send the admin tokens and the PSKs to. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { urlRefusal } from '../../../../domains/federation/cli-gateway.ts';

test('https anywhere, plain http only to a loopback host, nothing else', () => {
  for (const url of [
    'https://c017.example:8443',
    'https://10.0.0.1',
    'http://127.0.0.1:8080',
    'http://127.8.9.10',
    'http://localhost:8080',
    'http://LOCALHOST',
    'http://[::1]:8080',
  ])
    assert.equal(urlRefusal(url, '--url', 'the PSKs of fleet.json'), null, url);
  for (const url of [
    'http://c017.example:8080',
    'http://10.0.0.1',
    'http://127.0.0.1.nip.io',
    'http://localhost.example',
    'http://[::2]',
    'http://[::ffff:10.0.0.1]',
  ])
    assert.match(
      urlRefusal(url, '--url', 'the PSKs of fleet.json') ?? '',
      /over plain http \(--url\): use https:\/\//,
      url,
    );
  assert.match(urlRefusal('ftp://127.0.0.1', '--url', 'the PSKs') ?? '', /use https:\/\//);
  assert.match(urlRefusal('not a url', '--url', 'the PSKs') ?? '', /not a URL/);
});
