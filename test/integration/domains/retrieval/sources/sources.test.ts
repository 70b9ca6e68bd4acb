/** The Source contract suite run by every built-in source: filesystem CSV, JSON lines, Parquet, and real PostgreSQL. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { filesystemSources } from '../../../../../domains/retrieval/sources/filesystem/source.ts';
import { postgresSources } from '../../../../../domains/retrieval/sources/postgres/source.ts';
import type { SourceInput } from '../../../../../domains/retrieval/sources/types.ts';
import { type After, runSourceContract } from '../../../../contract/source.contract.ts';
import { startPostgres } from '../../../../helpers/peers/postgres.ts';
import { FORMATS, writeAllFormats } from '../../../../helpers/retrieval-fixtures.ts';

const input = (platform: string, name: string, properties: Record<string, unknown>): SourceInput => ({
  urn: `urn:li:dataset:(urn:li:dataPlatform:${platform},${name},PROD)`,
  platform,
  name,
  properties,
  options: {},
  credentialOverride: null,
  formatHint: null,
  tag: 'meshgate-retrieval:contract',
});

for (const format of FORMATS) {
  runSourceContract(`filesystem ${format}`, async (t: After, rows) => {
    const root = mkdtempSync(join(tmpdir(), 'meshgate-contract-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const paths = writeAllFormats(root, 'contract', rows);
    return filesystemSources([root]).create(input('file', paths[format], { path: paths[format] }));
  });
}

runSourceContract(
  'postgres',
  async (t: After, rows) => {
    const pg = await startPostgres(t);
    const values = rows.map((r) => `('${r.id}', '${r.grp}', '${r.val}')`).join(',');
    await pg.psql(`CREATE TABLE contract (id text, grp text, val text); INSERT INTO contract VALUES ${values};`);
    const secrets = { reveal: () => JSON.stringify({ user: pg.user, password: pg.password }) };
    const props = { host: pg.host, port: pg.port, database: pg.database, secret_urn: 'urn:li:dataHubSecret:contract' };
    return postgresSources(() => secrets).create(input('postgres', 'contract', props));
  },
  { readJson: true },
);
