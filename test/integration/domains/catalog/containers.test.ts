import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createDataset, grant } from '../../../helpers/catalog.ts';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';

async function createContainer(gw: TestGateway, token: string, body: Record<string, unknown>): Promise<string> {
  const res = await gw.request('POST', '/api/catalog/containers/', { token, json: body });
  assert.equal(res.status, 201, res.text);
  return res.json as string;
}

/** Item paths of a container URN: v2 encoded, v2 raw, by-urn, legacy. */
function containerPaths(urn: string): string[] {
  const enc = encodeURIComponent(urn);
  return [
    `/api/catalog/containers/v2/${enc}`,
    `/api/catalog/containers/v2/${urn}`,
    `/api/catalog/containers/by-urn?urn=${enc}`,
    `/api/catalog/containers/${enc}`,
  ];
}

test('containers: admin creates, lists, reads, patches and deletes through every form', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const urn = await createContainer(gw, admin, {
    name: '/my/datasets/path',
    platform: 's3',
    tags: ['a'],
    properties: { k: 1 },
  });
  assert.equal(urn, 'urn:li:container:(urn:li:dataPlatform:s3,/my/datasets/path,PROD)');
  const dup = await gw.request('POST', '/api/catalog/containers/', {
    token: admin,
    json: { name: '/my/datasets/path', platform: 's3' },
  });
  assert.equal(dup.status, 409);
  assert.equal(dup.json.detail.reason, 'container_exists');
  const plain = await createContainer(gw, admin, { name: 'plain' });
  assert.equal(plain, 'urn:li:container:(urn:li:dataPlatform:platform,plain,PROD)');
  const listed = await gw.request('GET', '/api/catalog/containers/?query=my', { token: admin });
  assert.deepEqual(
    listed.json.map((c: { urn: string }) => c.urn),
    [urn],
  );
  for (const [i, path] of containerPaths(urn).entries()) {
    const got = await gw.request('GET', path, { token: admin });
    assert.equal(got.status, 200, path);
    assert.deepEqual(got.json, {
      ...got.json,
      name: i === 0 ? '/my/datasets/path' : `renamed-${i - 1}`,
      platform: 's3',
      parent_urn: null,
      urn,
      workroom_id: null,
      sub_containers: [],
      datasets: [],
      datasets_next_cursor: null,
    });
    const patched = await gw.request('PATCH', path, {
      token: admin,
      json: { name: `renamed-${i}`, description: path },
    });
    assert.equal(patched.status, 200, path);
    assert.equal(patched.json.urn, urn, 'the URN does not follow the name');
  }
  const child = await createContainer(gw, admin, { name: 'child', parent_urn: plain });
  assert.deepEqual(
    (await gw.request('GET', containerPaths(plain)[0] as string, { token: admin })).json.sub_containers,
    [child],
  );
  const cycle = await gw.request('PATCH', containerPaths(plain)[2] as string, {
    token: admin,
    json: { parent_urn: child },
  });
  assert.equal(cycle.status, 422);
  assert.equal(cycle.json.detail.reason, 'container_parent_invalid');
  const orphan = await gw.request('POST', '/api/catalog/containers/', {
    token: admin,
    json: { name: 'o', parent_urn: 'urn:li:container:nope' },
  });
  assert.equal(orphan.status, 404);
  for (const path of [containerPaths(urn)[1], containerPaths(plain)[2], containerPaths(child)[3]] as string[]) {
    assert.equal((await gw.request('DELETE', path, { token: admin })).status, 204, path);
    assert.equal((await gw.request('GET', path, { token: admin })).status, 404, path);
  }
});

test(
  'containers: creation, listing, updates and membership are admin-only; ' + 'reads filter members by ReBAC',
  async (t) => {
    const gw = await startTestGateway(t);
    const admin = await gw.adminToken();
    const user = await gw.userToken('user');
    const urn = await createContainer(gw, admin, { name: 'c', platform: 'file' });
    const mine = await createDataset(gw, user.token, { name: 'mine', platform: 'file' });
    const other = await createDataset(gw, admin, { name: 'other', platform: 'file' });
    const enc = encodeURIComponent(urn);
    const denied = [
      ['POST', '/api/catalog/containers/', { name: 'x' }],
      ['GET', '/api/catalog/containers/', undefined],
      ['PATCH', `/api/catalog/containers/v2/${enc}`, { description: 'x' }],
      ['DELETE', `/api/catalog/containers/by-urn?urn=${enc}`, undefined],
      ['PATCH', `/api/catalog/containers/${enc}`, { description: 'x' }],
      ['POST', `/api/catalog/containers/v2/${urn}/datasets`, { dataset_urn: mine }],
      ['POST', `/api/catalog/containers/by-urn/datasets?container_urn=${enc}`, { dataset_urn: mine }],
      ['DELETE', `/api/catalog/containers/v2/${urn}/datasets/${mine}`, undefined],
      [
        'DELETE',
        `/api/catalog/containers/by-urn/datasets?container_urn=${enc}&dataset_urn=${encodeURIComponent(mine)}`,
        undefined,
      ],
    ] as const;
    for (const [method, path, json] of denied) {
      const res = await gw.request(method, path, { token: user.token, json });
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.equal(res.json.detail.reason, 'admin_required');
    }
    // The dataset owner cannot move it into a container either: membership is admin-only.
    const viaPatch = await gw.request('PATCH', `/api/catalog/datasets/v2/${mine}`, {
      token: user.token,
      json: { container_urn: urn },
    });
    assert.equal(viaPatch.status, 403);
    assert.equal(viaPatch.json.detail.reason, 'container_membership_admin_only');
    const viaCreate = await gw.request('POST', '/api/catalog/datasets/', {
      token: user.token,
      json: { name: 'n', platform: 'file', container_urn: urn },
    });
    assert.equal(viaCreate.status, 403);
    assert.equal(
      (await gw.request('POST', '/api/catalog/datasets/', { token: user.token, json: { name: 'n', platform: 'file' } }))
        .status,
      201,
      'no partial write',
    );

    const add = await gw.request('POST', `/api/catalog/containers/v2/${urn}/datasets`, {
      token: admin,
      json: { dataset_urn: mine },
    });
    assert.deepEqual([add.status, add.json], [200, { message: 'ok' }]);
    const addQ = await gw.request('POST', `/api/catalog/containers/by-urn/datasets?container_urn=${enc}`, {
      token: admin,
      json: { dataset_urn: other },
    });
    assert.deepEqual([addQ.status, addQ.json], [200, { message: 'ok' }]);
    assert.equal(
      (await gw.request('GET', `/api/catalog/datasets/v2/${mine}`, { token: user.token })).json.container_urn,
      urn,
    );
    assert.deepEqual(
      (await gw.request('GET', `/api/catalog/containers/v2/${enc}`, { token: admin })).json.datasets,
      [mine, other].sort(),
    );
    assert.deepEqual(
      (await gw.request('GET', `/api/catalog/containers/v2/${enc}`, { token: user.token })).json.datasets,
      [mine],
      'filtered',
    );
    const rm = await gw.request('DELETE', `/api/catalog/containers/v2/${urn}/datasets/${encodeURIComponent(mine)}`, {
      token: admin,
    });
    assert.deepEqual([rm.status, rm.json], [200, { message: 'removed' }]);
    const again = await gw.request('DELETE', `/api/catalog/containers/v2/${urn}/datasets/${mine}`, { token: admin });
    assert.equal(again.json.detail.reason, 'dataset_not_in_container');
    const rmQ = await gw.request(
      'DELETE',
      `/api/catalog/containers/by-urn/datasets?container_urn=${enc}&dataset_urn=${encodeURIComponent(other)}`,
      {
        token: admin,
      },
    );
    assert.deepEqual([rmQ.status, rmQ.json], [200, { message: 'removed' }]);
    assert.equal(
      (await gw.request('GET', `/api/catalog/datasets/v2/${other}`, { token: admin })).json.container_urn,
      null,
    );
    const missing = await gw.request('POST', `/api/catalog/containers/v2/${urn}/datasets`, {
      token: admin,
      json: { dataset_urn: 'urn:li:dataset:none' },
    });
    assert.equal(missing.status, 404);
    const noContainer = await gw.request('POST', '/api/catalog/containers/v2/urn:li:container:none/datasets', {
      token: admin,
      json: { dataset_urn: mine },
    });
    assert.equal(noContainer.json.detail.reason, 'container_not_found');
    assert.equal(
      (await gw.request('POST', `/api/catalog/containers/v2/${urn}/datasets`, { token: admin, json: {} })).status,
      422,
    );
    assert.equal(
      (await gw.request('POST', '/api/catalog/containers/', { token: admin, json: { name: 'x', platform: 'a/b' } }))
        .status,
      422,
    );
  },
);

test(
  'member datasets page by datasets_cursor and datasets_page_size; ' + 'deleting a container detaches them',
  async (t) => {
    const gw = await startTestGateway(t);
    const admin = await gw.adminToken();
    const viewer = await gw.userToken('viewer');
    const urn = await createContainer(gw, admin, { name: 'paged' });
    const members: string[] = [];
    for (let i = 0; i < 25; i++) {
      const d = await createDataset(gw, admin, {
        name: `d/${String(i).padStart(2, '0')}`,
        platform: 'file',
        container_urn: urn,
      });
      members.push(d);
      if (i % 3 === 0) grant(gw, viewer.id, 'viewer', d);
    }
    const readAll = async (token: string, size: number) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 50; pages++) {
        const q = `datasets_page_size=${size}${cursor ? `&datasets_cursor=${cursor}` : ''}`;
        const res = await gw.request('GET', `/api/catalog/containers/by-urn?urn=${encodeURIComponent(urn)}&${q}`, {
          token,
        });
        assert.equal(res.status, 200, res.text);
        assert.ok(res.json.datasets.length <= size);
        seen.push(...res.json.datasets);
        cursor = res.json.datasets_next_cursor;
        if (!cursor) return { seen, pages: pages + 1 };
      }
      throw new Error('paging did not end');
    };
    const all = await readAll(admin, 10);
    assert.deepEqual(all.seen, [...members].sort());
    assert.equal(all.pages, 3);
    const filtered = await readAll(viewer.token, 2);
    assert.deepEqual(filtered.seen, members.filter((_, i) => i % 3 === 0).sort());
    assert.equal(
      (
        await gw.request('GET', `/api/catalog/containers/by-urn?urn=${encodeURIComponent(urn)}&datasets_cursor=!!`, {
          token: admin,
        })
      ).status,
      422,
    );
    assert.equal(
      (
        await gw.request('GET', `/api/catalog/containers/by-urn?urn=${encodeURIComponent(urn)}&datasets_page_size=0`, {
          token: admin,
        })
      ).status,
      422,
    );
    assert.equal(
      (await gw.request('DELETE', `/api/catalog/containers/v2/${encodeURIComponent(urn)}`, { token: admin })).status,
      204,
    );
    assert.equal(
      (await gw.request('GET', `/api/catalog/datasets/v2/${members[0]}`, { token: admin })).json.container_urn,
      null,
    );
  },
);

test(
  'path-style membership: the container URN as one encoded segment, the ' +
    'dataset in the next one or the query; admin only',
  async (t) => {
    const gw = await startTestGateway(t);
    const admin = await gw.adminToken();
    const user = await gw.userToken('user');
    const urn = await createContainer(gw, admin, { name: '/a/b (c)', platform: 's3' });
    const first = await createDataset(gw, admin, { name: 'first', platform: 'file' });
    const second = await createDataset(gw, admin, { name: 'second', platform: 'file' });
    const base = `/api/catalog/containers/${encodeURIComponent(urn)}/datasets`;
    for (const [method, path, json] of [
      ['POST', base, { dataset_urn: first }],
      ['DELETE', `${base}/${encodeURIComponent(first)}`, undefined],
      ['DELETE', `${base}?dataset_urn=${encodeURIComponent(first)}`, undefined],
    ] as const) {
      const denied = await gw.request(method, path, { token: user.token, json });
      assert.deepEqual([denied.status, denied.json.detail.reason], [403, 'admin_required'], `${method} ${path}`);
    }
    for (const dataset of [first, second]) {
      const add = await gw.request('POST', base, { token: admin, json: { dataset_urn: dataset } });
      assert.deepEqual([add.status, add.json], [200, { message: 'ok' }]);
    }
    assert.deepEqual(
      (await gw.request('GET', `/api/catalog/containers/${encodeURIComponent(urn)}`, { token: admin })).json.datasets,
      [first, second].sort(),
    );
    const rm = await gw.request('DELETE', `${base}/${encodeURIComponent(first)}`, { token: admin });
    assert.deepEqual([rm.status, rm.json], [200, { message: 'removed' }]);
    const rmQ = await gw.request('DELETE', `${base}?dataset_urn=${encodeURIComponent(second)}`, { token: admin });
    assert.deepEqual([rmQ.status, rmQ.json], [200, { message: 'removed' }]);
    assert.deepEqual(
      (await gw.request('GET', `/api/catalog/containers/${encodeURIComponent(urn)}`, { token: admin })).json.datasets,
      [],
    );
    const again = await gw.request('DELETE', `${base}/${encodeURIComponent(first)}`, { token: admin });
    assert.equal(again.json.detail.reason, 'dataset_not_in_container');
    const noContainer = await gw.request(
      'POST',
      `/api/catalog/containers/${encodeURIComponent('urn:li:container:none')}/datasets`,
      {
        token: admin,
        json: { dataset_urn: first },
      },
    );
    assert.equal(noContainer.json.detail.reason, 'container_not_found');
    assert.equal((await gw.request('POST', base, { token: admin, json: {} })).status, 422);
    assert.equal((await gw.request('DELETE', base, { token: admin })).status, 422, 'no dataset named');
  },
);
