/**
 * `meshgate user ...`: manage local users on a gateway's data dir. Passwords
 * are read from stdin (`--password-stdin`) or generated and printed once;
 * never taken from argv, where `ps` would show them.
 */
import { parseArgs } from 'node:util';
import { ApiError } from '../../gateway/errors/api-error.ts';
import type { CliCommand, CliEnv } from '../../gateway/module.ts';
import { generatePassword } from './password.ts';
import { USER_DIRECTORY, type UserDirectory } from './users.ts';

const USAGE = `meshgate user add <username> [--admin] [--email <e>] [--password-stdin]
meshgate user reset-password <username> [--password-stdin]
meshgate user disable|enable <username>
meshgate user list`;

interface UserFlags {
  readonly admin: boolean;
  readonly email?: string;
  readonly 'password-stdin': boolean;
}

function listUsers(users: UserDirectory, env: CliEnv): number {
  for (const u of users.list())
    env.out(
      `${u.id}  ${u.username}  roles=${u.roles.join(',') || '-'}  source=${u.source}${u.disabled ? '  disabled' : ''}`,
    );
  return 0;
}

/** `add` and `reset-password`: the password from stdin or generated, and shown once only when generated. */
async function setUserPassword(
  action: 'add' | 'reset-password',
  username: string,
  flags: UserFlags,
  users: UserDirectory,
  env: CliEnv,
) {
  const secret = flags['password-stdin'] ? (await env.readStdin()).replace(/\r?\n$/, '') : generatePassword();
  if (secret.length < 8) {
    env.err('meshgate: a password needs at least 8 characters');
    return 2;
  }
  if (action === 'add') {
    const user = await users.create({
      username,
      password: secret,
      roles: flags.admin ? ['admin'] : [],
      email: flags.email ?? null,
    });
    env.out(`created user ${user.username} (${user.id})${flags.admin ? ' with role admin' : ''}`);
  } else {
    await users.setPassword(username, secret);
    env.out(`password reset for ${username}`);
  }
  if (!flags['password-stdin']) env.out(`password: ${secret} (shown once)`);
  return 0;
}

/** The action the positionals name; a wrong shape prints the usage (exit 2). */
async function runUserAction(
  positionals: readonly string[],
  flags: UserFlags,
  users: UserDirectory,
  env: CliEnv,
): Promise<number> {
  const [action, username] = positionals;
  if (action === 'list' && !username) return listUsers(users, env);
  if ((action === 'disable' || action === 'enable') && username) {
    // A running gateway sees this commit on its next request (users.ts: data_version).
    users.setDisabled(username, action === 'disable');
    env.out(`${action}d user ${username}`);
    return 0;
  }
  if ((action === 'add' || action === 'reset-password') && username)
    return setUserPassword(action, username, flags, users, env);
  env.err(`usage:\n${USAGE}`);
  return 2;
}

export const userCommand: CliCommand = {
  name: 'user',
  summary: 'create users, reset passwords, disable or enable users, list users',
  usage: USAGE,
  async run(args, env) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        admin: { type: 'boolean', default: false },
        email: { type: 'string' },
        'password-stdin': { type: 'boolean', default: false },
      },
    });
    const domains = await env.boot(['auth']);
    try {
      return await runUserAction(positionals, values, domains.services.get(USER_DIRECTORY), env);
    } catch (error) {
      if (error instanceof ApiError) {
        env.err(`meshgate: ${error.reason}`);
        return 1;
      }
      throw error;
    } finally {
      await domains.close();
    }
  },
};
