/**
 * Deployments managed from the operator console in a real browser (Debian's chromium): an administrator creates
 * one with two weighted replicas in the form, is told beside the field what the API refused, changes its limits,
 * and deletes it after confirming; a user who is no administrator is offered none of it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launchBrowser, signIn } from '../../../../helpers/browser.ts';
import { ADMIN_PASSWORD, startTestGateway } from '../../../../helpers/gateway.ts';
import { DEAD_UPSTREAM, startAppServer } from '../../../../helpers/upstreams.ts';
import { waitFor } from '../../../../helpers/wait.ts';

test('an administrator creates, changes and deletes a deployment in the console; others may not', async (t) => {
  const gw = await startTestGateway(t);
  const app = await startAppServer(t);
  const browser = await launchBrowser(t, [gw]);
  const { page } = await signIn(browser, gw, 'admin', ADMIN_PASSWORD);
  const create = page.getByRole('form', { name: 'New deployment' });
  await create.getByLabel('Kind').selectOption('app');
  await create.getByLabel('Name').fill('made-here');

  // The API judges the input: a replica URL of another scheme is refused, shown beside the replicas.
  await create.getByLabel('Replicas').fill('ftp://127.0.0.1:21');
  await create.getByRole('button', { name: 'Create deployment' }).click();
  await create.getByRole('alert').getByText('correct the marked fields').waitFor();
  assert.equal(await create.getByLabel('Replicas').getAttribute('aria-invalid'), 'true');

  await create.getByLabel('Replicas').fill(`${app.url}\n${DEAD_UPSTREAM} 3`);
  await create.getByLabel('Cookie affinity').check();
  await create.getByRole('button', { name: 'Create deployment' }).click();
  const row = page.getByRole('table', { name: 'Deployments' }).getByRole('row', { name: 'made-here' });
  await row.getByText('weight 3').waitFor();
  const token = await gw.adminToken();
  const record = async () =>
    (await gw.request('GET', '/api/serving/deployments?kind=app', { token })).json.find(
      (d: { name: string }) => d.name === 'made-here',
    );
  const created = await record();
  assert.deepEqual(created.upstreams, [
    { url: app.url, weight: 1 },
    { url: DEAD_UPSTREAM, weight: 3 },
  ]);
  assert.equal(created.affinity, 'cookie');

  await row.getByRole('button', { name: 'Change made-here' }).click();
  const change = page.getByRole('form', { name: 'Change made-here' });
  await change.getByLabel('Max concurrent').fill('8');
  await change.getByLabel('Rate limit (requests/s)').fill('5');
  await change.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('form', { name: 'New deployment' }).waitFor();
  const changed = await record();
  assert.deepEqual([changed.max_concurrent, changed.rate_limit], [8, { requests_per_second: 5, burst: 5 }]);

  page.once('dialog', (dialog) => void dialog.accept());
  await row.getByRole('button', { name: 'Delete made-here' }).click();
  await waitFor(async () => (await record()) === undefined, { what: 'the deployment deleted' });
  await row.waitFor({ state: 'detached' });

  await gw.userToken('viewer');
  const viewer = (await signIn(browser, gw, 'viewer', 'viewer-password')).page;
  await viewer.getByRole('heading', { name: 'Deployments', level: 2 }).waitFor();
  assert.equal(await viewer.getByRole('form', { name: 'New deployment' }).count(), 0);
  assert.equal(await viewer.getByRole('columnheader', { name: 'Actions' }).count(), 0);
});
