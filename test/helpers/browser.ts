/**
 * Debian's chromium driven by playwright-core against real test gateways.
 * TLS stays verified: chromium is told to accept exactly the gateways' own
 * server keys (`--ignore-certificate-errors-spki-list`, SHA-256 of each
 * certificate's SubjectPublicKeyInfo, the form Chromium's certificate
 * verifier pins against), never `ignoreHTTPSErrors`; any other certificate
 * still fails. Host names (fed-a.test, ...) map to loopback in chromium's
 * resolver, so no /etc/hosts entry is needed.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import type { After, TestGateway } from './gateway.ts';

export const CHROMIUM = '/usr/bin/chromium';

/**
 * What the browser is pointed at: a gateway's origin and the certificate it serves, in process (a TestGateway) or a
 * `meshgate serve` process (browserTarget).
 */
export interface BrowserTarget {
  url: string;
  serverCertPem(): string;
}

/** A `meshgate serve` process (test/helpers/workers.ts) as the browser sees it: its server certificate is on disk. */
export function browserTarget(served: { base: string }, dataDir: string): BrowserTarget {
  return { url: served.base, serverCertPem: () => readFileSync(join(dataDir, 'tls', 'server.pem'), 'utf8') };
}

function certPemOf(gw: TestGateway | BrowserTarget): string {
  return 'gateway' in gw ? gw.gateway.deps.runtime.serverCertPem() : gw.serverCertPem();
}

/** base64(SHA-256(SPKI)) of a gateway's server certificate. */
export function spkiPin(gw: TestGateway | BrowserTarget): string {
  const spki = new X509Certificate(certPemOf(gw)).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('base64');
}

export async function launchBrowser(t: After, gateways: (TestGateway | BrowserTarget)[]): Promise<Browser> {
  const hosts = [...new Set(gateways.map((gw) => new URL(gw.url).hostname).filter((h) => h !== 'localhost'))];
  const args = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    `--ignore-certificate-errors-spki-list=${gateways.map(spkiPin).join(',')}`,
    ...(hosts.length ? [`--host-resolver-rules=${hosts.map((h) => `MAP ${h} 127.0.0.1`).join(', ')}`] : []),
  ];
  // playwright gives every launch a fresh temporary profile (user-data-dir) and removes it on close.
  const browser = await chromium.launch({ executablePath: CHROMIUM, args });
  t.after(() => browser.close());
  // The browser holds connections to the gateways and is a child process: it goes before their leak checks.
  for (const gw of gateways) if ('gateway' in gw) gw.closeBeforeStop(() => browser.close());
  return browser;
}

/** A fresh browser context signed in through the gateway's /login page, on the console. */
export async function signIn(
  browser: Browser,
  gw: Pick<TestGateway, 'url'>,
  username: string,
  password: string,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${gw.url}/login?next=${encodeURIComponent('/console/')}`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${gw.url}/console/`);
  await page.getByRole('navigation', { name: 'Console pages' }).waitFor();
  return { context, page };
}
