/**
 * `meshgate user ...`: manage local users on a gateway's data dir. Passwords
 * are read from stdin (`--password-stdin`) or generated and printed once;
 * never taken from argv, where `ps` would show them.
 */
import { parseArgs } from 'node:util';
import { ApiError } from '../../gateway/errors/api-error.ts';
import type { CliCommand } from '../../gateway/module.ts';
import { AttributeVocabulary } from './attributes.ts';
import { generatePassword } from './password.ts';
import { SessionRevocations } from './revocations.ts';
import { createAuthStore } from './store.ts';
import { UserDirectory } from './users.ts';

const USAGE = `meshgate user add <username> [--admin] [--email <e>] [--password-stdin]
meshgate user reset-password <username> [--password-stdin]
meshgate user disable|enable <username>
meshgate user list`;

export const userCommand: CliCommand = {
  name: 'user',
  summary: 'create users, reset passwords, disable or enable users, list users',
  usage: USAGE,
  async run(args, env) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: { admin: { type: 'boolean', default: false }, email: { type: 'string' }, 'password-stdin': { type: 'boolean', default: false } },
    });
    const [action, username] = positionals;
    const { db, sqlite } = env.openDatabase();
    const store = createAuthStore(db, sqlite);
    const now = () => new Date();
    const sessions = new SessionRevocations(store, () => Math.floor(Date.now() / 1000), env.config.auth.accessTokenTtlSeconds);
    const users = new UserDirectory(store, now, new AttributeVocabulary(store, now, () => {}), () => {}, sessions);
    const password = async () => (values['password-stdin'] ? (await env.readStdin()).replace(/\r?\n$/, '') : generatePassword());
    try {
      if (action === 'list' && !username) {
        for (const u of users.list()) env.out(`${u.id}  ${u.username}  roles=${u.roles.join(',') || '-'}  source=${u.source}${u.disabled ? '  disabled' : ''}`);
        return 0;
      }
      if ((action === 'disable' || action === 'enable') && username) {
        // A running gateway sees this commit on its next request (users.ts: data_version).
        users.setDisabled(username, action === 'disable');
        env.out(`${action}d user ${username}`);
        return 0;
      }
      if ((action === 'add' || action === 'reset-password') && username) {
        const secret = await password();
        if (secret.length < 8) {
          env.err('meshgate: a password needs at least 8 characters');
          return 2;
        }
        if (action === 'add') {
          const user = await users.create({ username, password: secret, roles: values.admin ? ['admin'] : [], email: values.email ?? null });
          env.out(`created user ${user.username} (${user.id})${values.admin ? ' with role admin' : ''}`);
        } else {
          await users.setPassword(username, secret);
          env.out(`password reset for ${username}`);
        }
        if (!values['password-stdin']) env.out(`password: ${secret} (shown once)`);
        return 0;
      }
      env.err(`usage:\n${USAGE}`);
      return 2;
    } catch (error) {
      if (error instanceof ApiError) {
        env.err(`meshgate: ${error.reason}`);
        return 1;
      }
      throw error;
    } finally {
      sqlite.close();
    }
  },
};
