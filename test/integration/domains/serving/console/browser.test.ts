/**
 * The operator console in a real browser (Debian's chromium) against real
 * gateways: sign in through /login, create two federation records in the
 * console's form (its validation errors beside their fields), pair the
 * gateways from their cards and watch both read PAIRED, read each
 * deployment's probed health (each replica's) and request count, its last hour as charts, open a deployed app, follow
 * a job's log, change routing and read the smoke results, and a non-admin who
 * is offered no admin page. The federation pair runs in process (startPeer's gateways); the console's own pages are
 * tested against `meshgate serve`, the shipped executable, started as the systemd unit starts it. Each page is
 * screenshot; with MESHGATE_UPDATE_SCREENSHOTS=1 the shots replace
 * docs/console/'s, otherwise they go to a temporary folder, so a test run leaves the checkout as it was.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import type { Page } from 'playwright-core';
import { execMeshgate } from '../../../../helpers/artifact.ts';
import { browserTarget, launchBrowser, signIn } from '../../../../helpers/browser.ts';
import { newPsk, routeTo, SHARED_ISSUER, startPeer } from '../../../../helpers/federation.ts';
import { ADMIN_PASSWORD } from '../../../../helpers/gateway.ts';
import { MARKER, TERMINAL } from '../../../../helpers/jobs.ts';
import { DEAD_UPSTREAM, startAppServer } from '../../../../helpers/upstreams.ts';
import { waitFor as waitUntil } from '../../../../helpers/wait.ts';
import {
  adminToken,
  connection,
  ADMIN_PASSWORD as SERVED_ADMIN_PASSWORD,
  type Served,
  serve,
} from '../../../../helpers/workers.ts';

const UPDATE_DOCS = process.env.MESHGATE_UPDATE_SCREENSHOTS === '1';
const SHOTS = UPDATE_DOCS
  ? join(import.meta.dirname, '../../../../../docs/console')
  : mkdtempSync(join(tmpdir(), 'meshgate-console-shots-'));
if (!UPDATE_DOCS) process.once('exit', () => rmSync(SHOTS, { recursive: true, force: true }));

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: false });
}

/** Fills the console's new-record form and submits it; field labels are what a screen reader announces. */
async function createInForm(page: Page, fields: Record<string, string>, role?: string): Promise<void> {
  const form = page.getByRole('form', { name: 'New federation record' });
  if (role) await form.getByLabel('Role').selectOption(role);
  for (const [label, value] of Object.entries(fields)) await form.getByLabel(label, { exact: true }).fill(value);
  await form.getByRole('button', { name: 'Create record' }).click();
}

test('records created in the form pair from the cards; both read PAIRED, diagnose lists each layer', async (t) => {
  const [a, b] = [await startPeer(t, 'fed-a'), await startPeer(t, 'fed-b')];
  const psk = newPsk();
  const browser = await launchBrowser(t, [a, b]);
  const onA = (await signIn(browser, a, 'admin', ADMIN_PASSWORD)).page;
  const onB = (await signIn(browser, b, 'admin', ADMIN_PASSWORD)).page;
  for (const page of [onA, onB]) await page.getByRole('link', { name: 'Federation' }).click();
  await onA.getByText('No federation records.').waitFor();

  // The API judges the input; each problem is shown beside its field, which is marked invalid and takes the focus.
  await createInForm(onA, { 'Peer cluster name': 'fed-b', 'Pre-shared key': 'short', 'Shared issuer URL': 'nope' });
  const form = onA.getByRole('form', { name: 'New federation record' });
  await form.getByRole('alert').getByText('Not created').waitFor();
  const psKey = form.getByLabel('Pre-shared key', { exact: true });
  assert.equal(await psKey.getAttribute('aria-invalid'), 'true');
  assert.match(String(await psKey.getAttribute('aria-describedby')), /fed-preshared_key-error/);
  await form.locator('#fed-preshared_key-error').getByText('at least 16 characters').waitFor();
  assert.equal(await form.getByLabel('Shared issuer URL', { exact: true }).getAttribute('aria-invalid'), 'true');
  assert.equal(await form.getByLabel('Peer cluster name', { exact: true }).getAttribute('aria-invalid'), null);
  assert.equal(await onA.evaluate(() => document.activeElement?.id), 'fed-preshared_key', 'focus on the first problem');
  assert.equal((await a.request('GET', '/api/cluster/federations', { token: await a.adminToken() })).json.length, 0);
  assert.ok(!(await onA.content()).includes(psk), 'the key is never put in the page');

  // Keyboard only on B: tab from the role select through the fields, type, submit with Enter.
  await onB.getByRole('form', { name: 'New federation record' }).getByLabel('Role').selectOption('receiver');
  await onB.getByLabel('Role').focus();
  await onB.keyboard.press('Tab');
  await onB.keyboard.type('fed-a');
  for (const label of ['Peer address', 'Peer host name', 'Pre-shared key']) {
    await onB.keyboard.press('Tab');
    assert.equal(await onB.evaluate(() => document.activeElement?.getAttribute('id')), fieldId(label));
  }
  await onB.keyboard.type(psk);
  await onB.keyboard.press('Tab');
  await onB.keyboard.type(SHARED_ISSUER);
  await onB.keyboard.press('Enter');
  const route = routeTo(b);
  await createInForm(onA, {
    'Peer cluster name': 'fed-b',
    'Peer address': route.ip,
    'Peer host name': route.hostname,
    'Pre-shared key': psk,
    'Shared issuer URL': SHARED_ISSUER,
  });

  const cardOn = (page: Page, peer: string) => page.getByRole('article', { name: peer });
  await cardOn(onB, 'fed-a').getByText('WAITING', { exact: true }).waitFor();
  await cardOn(onA, 'fed-b').getByRole('button', { name: 'Pair fed-b' }).click();
  await cardOn(onA, 'fed-b').getByText('PAIRED', { exact: true }).waitFor();
  await cardOn(onB, 'fed-a').getByText('PAIRED', { exact: true }).waitFor();
  await cardOn(onA, 'fed-b').getByRole('button', { name: 'Diagnose fed-b' }).click();
  const checklist = cardOn(onA, 'fed-b').getByRole('list', { name: 'Connection layers' });
  await checklist.getByText('All layers pass').or(onA.getByText('All layers pass')).first().waitFor();
  assert.ok((await checklist.getByRole('listitem').count()) >= 3, 'diagnose shows each layer');
  await shoot(onA, 'federation');
});

const fieldId = (label: string) =>
  ({ 'Peer address': 'fed-address', 'Peer host name': 'fed-hostname', 'Pre-shared key': 'fed-preshared_key' })[label];

/**
 * `meshgate serve` as the unit starts it, the shipped artifact (test/helpers/artifact.ts), with an administrator and a
 * viewer added by `meshgate user add` on its data dir first; killed and removed when the test ends.
 */
async function servedGateway(t: TestContext) {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-console-'));
  const started: Served[] = [];
  t.after(async () => {
    for (const served of started) await served.killTree();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  // Both users exist before the gateway starts, so every worker knows them from its first request.
  const addUser = (username: string, password: string, admin: string[] = []) =>
    execMeshgate(['user', 'add', username, ...admin, '--password-stdin', '--data-dir', dir], {}, { input: password });
  await addUser('admin', SERVED_ADMIN_PASSWORD, ['--admin']);
  await addUser('viewer', VIEWER_PASSWORD);
  const served = await serve(dir, ['--https-port', '0'], { PLATFORM_UPSTREAM_HEALTH_INTERVAL_MS: '100' });
  started.push(served);
  const api = connection(served);
  t.after(() => api.close());
  return { served, target: browserTarget(served, dir), token: await adminToken(served), call: api.call };
}

const VIEWER_PASSWORD = 'viewer-password';

test('deployments, jobs with their log, routing with smoke results; a non-admin sees no admin page', async (t) => {
  const gw = await servedGateway(t);
  const deployApp = async (body: Record<string, unknown>) => {
    const res = await gw.call('POST', '/api/serving/deployments', { token: gw.token, json: { kind: 'app', ...body } });
    assert.equal(res.status, 201, res.text);
    return res.json as { runtime_path: string };
  };
  const app = await startAppServer(t);
  const notes = await deployApp({ name: 'notes', upstream: app.url, health_path: '/dashboard' });
  await deployApp({ name: 'gone', upstream: DEAD_UPSTREAM });
  // Two replicas, one of them dead: its probes eject it, and the page says so beside the live one.
  await deployApp({ kind: 'model', name: 'pair', upstreams: [{ url: app.url }, { url: DEAD_UPSTREAM, weight: 2 }] });
  const REQUESTS = 5;
  for (let i = 0; i < REQUESTS; i++)
    assert.equal((await gw.call('GET', `${notes.runtime_path}/dashboard`, { token: gw.token })).status, 200);
  const job = await gw.call('POST', '/api/cluster/jobs/submit', {
    token: gw.token,
    json: { entrypoint: `echo console-log-line; echo '${MARKER}{"ok":1}'` },
  });
  assert.equal(job.status, 201, job.text);
  await waitUntil(
    async () => {
      const status = await gw.call('GET', `/api/cluster/jobs/${job.json.id}/status`, { token: gw.token });
      return TERMINAL.has(status.json.status);
    },
    { timeoutMs: 60_000, what: `job ${job.json.id} to end` },
  );
  const routing = async () =>
    (await gw.call('GET', '/api/config/routing', { token: gw.token })).json.service_prefixes.tools;
  const browser = await launchBrowser(t, [gw.target]);
  const { page } = await signIn(browser, gw.target, 'admin', SERVED_ADMIN_PASSWORD);

  // The page refreshes itself: the probe's verdicts and the request count arrive without a reload.
  const row = (name: string) => page.getByRole('table', { name: 'Deployments' }).getByRole('row', { name: name });
  await row('notes').locator('td[data-label="Health"]').getByText('healthy', { exact: true }).waitFor();
  await row('notes').locator('td[data-label="Requests"]').getByText(String(REQUESTS)).waitFor();
  await row('gone').locator('td[data-label="Health"]').getByText('unhealthy', { exact: true }).waitFor();
  await row('gone').getByText('upstream_unreachable', { exact: false }).waitFor();
  const replicas = row('pair').getByRole('list', { name: 'Replicas' }).getByRole('listitem');
  await replicas.nth(0).getByText('healthy', { exact: true }).waitFor();
  await replicas.nth(1).getByText('ejected').waitFor();
  await row('pair').getByText('weight 2').waitFor();
  // The last hour as charts, every process's requests summed: 5 requests in this minute are 0.083 a second.
  await row('notes').getByText('Last hour').click();
  await row('notes')
    .getByRole('img', { name: /^Requests per second over the last hour: requests peak 0\.083/ })
    .waitFor();
  await row('notes')
    .getByRole('img', { name: /^Time to first byte over the last hour: p50 peak \d+ ms/ })
    .waitFor();
  await row('notes')
    .getByRole('img', { name: /^Errors per minute over the last hour: 4xx peak 0, 5xx peak 0/ })
    .waitFor();
  await shoot(page, 'deployments');
  const [opened] = await Promise.all([
    page.waitForEvent('load'),
    row('notes').getByRole('link', { name: notes.runtime_path }).click(),
  ]);
  assert.ok(opened);
  await page.getByRole('link', { name: 'dashboard' }).waitFor();
  await page.goBack();

  await page.getByRole('link', { name: 'Jobs' }).click();
  await page.getByRole('button', { name: `Log of ${job.json.id}` }).click();
  await page.getByText('console-log-line').waitFor();
  await shoot(page, 'jobs');

  await page.getByRole('link', { name: 'Routing' }).click();
  await page.getByLabel('tools prefix').fill('tools-without-slash');
  await page.getByRole('button', { name: 'Validate and apply' }).click();
  await page.getByText('Not applied').waitFor();
  assert.equal(await routing(), '/runtime/tools');
  await page.getByLabel('tools prefix').fill('/runtime/toolbox');
  await page.getByRole('button', { name: 'Validate and apply' }).click();
  const smoke = page.getByRole('table', { name: 'Smoke checks' });
  await smoke.waitFor({ timeout: 60_000 });
  await smoke
    .getByRole('row', { name: /api_ping/ })
    .getByText('pass')
    .waitFor();
  assert.equal(await routing(), '/runtime/toolbox');
  await shoot(page, 'routing');

  for (const [link, name] of [
    ['Catalog', 'catalog'],
    ['Retrieval', 'retrieval'],
    ['Users', 'users'],
  ] as const) {
    await page.getByRole('link', { name: link, exact: true }).click();
    await page.getByRole('heading', { level: 2 }).first().waitFor();
    await shoot(page, name);
  }

  const viewer = (await signIn(browser, gw.target, 'viewer', VIEWER_PASSWORD)).page;
  const nav = viewer.getByRole('navigation', { name: 'Console pages' });
  await nav.getByRole('link', { name: 'Deployments' }).waitFor();
  assert.equal(await nav.getByRole('link', { name: 'Federation' }).count(), 0);
  assert.equal(await nav.getByRole('link', { name: 'Users' }).count(), 0);
  await viewer.goto(`${gw.target.url}/console/#/users`);
  await viewer.getByRole('heading', { name: 'Deployments', level: 2 }).waitFor();
  assert.equal(await viewer.getByRole('button', { name: 'Validate and apply' }).count(), 0);
});
