/**
 * Local users of this cluster: created by the bootstrap, the CLI, the
 * subjects API, or (for mesh-brokered callers) at first admission. Other
 * domains reach it through the USER_DIRECTORY service key.
 */
import { randomUUID } from 'node:crypto';
import type { ChangeFeed } from '../../gateway/db/change-feed.ts';
import { DEFAULT_TENANT } from '../../gateway/principal.ts';
import { createServiceKey } from '../../gateway/services.ts';
import type { AttributeVocabulary } from './attributes.ts';
import { AuthErrors } from './errors.ts';
import { generatePassword, hashPassword } from './password.ts';
import type { SessionRevocations } from './revocations.ts';
import type { AuthStore, UserRow } from './store.ts';
import type { TokenSubject } from './tokens.ts';

export interface NewUserInput {
  username: string;
  password?: string | null;
  roles?: string[];
  email?: string | null;
  attributes?: Record<string, unknown>;
  source?: 'local' | 'mesh';
  externalId?: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class UserDirectory {
  /**
   * Rows by id, read on every authenticated request. Every write below clears it, and so does a
   * change by another process or the `meshgate user` CLI, delivered by the change feed (`invalidate`);
   * byId catches the feed up first, so a disable reaches the very next request.
   */
  readonly #byId = new Map<string, UserRow>();

  constructor(
    private readonly store: AuthStore,
    private readonly now: () => Date,
    private readonly vocabulary: AttributeVocabulary,
    /** Called when users change, so caches of verified credentials drop stale entries. */
    private readonly onChange: () => void,
    private readonly sessions: Pick<SessionRevocations, 'endUser'>,
    private readonly feed: Pick<ChangeFeed, 'catchUp'>,
  ) {}

  async create(input: NewUserInput): Promise<UserRow> {
    if (this.store.userByUsername(input.username)) throw AuthErrors.make.user_exists({ username: input.username });
    // Brokered users' attributes are their peer's, not this realm's vocabulary.
    if (input.source !== 'mesh') this.vocabulary.checkValues(input.attributes ?? {});
    const at = this.now().toISOString();
    const row = {
      id: randomUUID(),
      username: input.username,
      email: input.email ?? null,
      passwordHash: input.password ? await hashPassword(input.password) : null,
      roles: input.roles ?? [],
      attributes: input.attributes ?? {},
      source: input.source ?? 'local',
      externalId: input.externalId ?? null,
      disabled: false,
      createdAt: at,
      updatedAt: at,
    } satisfies UserRow;
    this.store.insertUser(row);
    this.#byId.clear();
    return row;
  }

  /** By uuid or username, as the subjects API and the CLI address users. */
  resolve(idOrUsername: string): UserRow | undefined {
    return (
      (UUID.test(idOrUsername) ? this.store.userById(idOrUsername) : undefined) ??
      this.store.userByUsername(idOrUsername)
    );
  }

  byId(id: string): UserRow | undefined {
    this.feed.catchUp();
    const cached = this.#byId.get(id);
    if (cached) return cached;
    const row = this.store.userById(id);
    // Misses are not kept: ids come from callers, and the map stays as small as the users table.
    if (row) this.#byId.set(id, Object.freeze(row));
    return row;
  }

  byExternalId(externalId: string): UserRow | undefined {
    return this.store.userByExternalId(externalId);
  }

  list(): UserRow[] {
    return this.store.listUsers();
  }

  async setPassword(idOrUsername: string, password: string): Promise<UserRow> {
    const user = this.resolve(idOrUsername);
    if (!user) throw AuthErrors.make.user_not_found({ user: idOrUsername });
    this.store.updateUser(user.id, { passwordHash: await hashPassword(password), updatedAt: this.now().toISOString() });
    // A reset answers a leaked password: whoever signed in with it loses their sessions, as at logout.
    this.sessions.endUser(user.id);
    this.#changed();
    return user;
  }

  update(
    id: string,
    patch: { roles?: string[]; attributes?: Record<string, unknown>; email?: string | null; disabled?: boolean },
  ): void {
    const current = this.store.userById(id);
    if (patch.attributes && current?.source === 'local')
      this.vocabulary.checkValues(patch.attributes, current.attributes);
    this.store.updateUser(id, { ...patch, updatedAt: this.now().toISOString() });
    this.#changed();
  }

  /**
   * Disabling suspends: the user's tokens, PATs, refresh tokens and mesh admission are refused
   * while it lasts, nothing is revoked, so enabling restores what has not expired meanwhile.
   */
  setDisabled(idOrUsername: string, disabled: boolean): UserRow {
    const user = this.resolve(idOrUsername);
    if (!user) throw AuthErrors.make.user_not_found({ user: idOrUsername });
    this.update(user.id, { disabled });
    return this.store.userById(user.id) as UserRow;
  }

  delete(id: string): void {
    this.store.deleteUser(id);
    this.#changed();
  }

  /** A user changed elsewhere (the change feed): cached rows and the principals built from them go. */
  invalidate(): void {
    this.#changed();
  }

  #changed(): void {
    this.#byId.clear();
    this.onChange();
  }

  /**
   * First start only: creates the administrator. Returns the generated
   * password when none was configured, so the caller can print it once.
   */
  async ensureBootstrapAdmin(username: string, configured: string | null): Promise<string | null> {
    if (this.store.countUsers() > 0) return null;
    const password = configured ?? generatePassword();
    await this.create({ username, password, roles: ['admin'] });
    return configured ? null : password;
  }
}

/** A user as the platform SDK's LocalUserResponse reads it. */
export function userView(user: UserRow) {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    roles: [...user.roles],
    active: !user.disabled,
    deleted: false,
    is_external: user.source === 'mesh',
    external_id: user.externalId,
    is_superuser: user.roles.includes('admin'),
    created_at: user.createdAt,
    updated_at: user.updatedAt,
  };
}

/** What a token says of a user: the attributes the vocabulary lets tokens carry (attributes.ts). */
export function subjectOf(user: UserRow, vocabulary: AttributeVocabulary): TokenSubject {
  return {
    userId: user.id,
    username: user.username,
    email: user.email,
    roles: user.roles,
    attributes: vocabulary.issued(user.attributes),
    tenantId: DEFAULT_TENANT,
  };
}

export const USER_DIRECTORY = createServiceKey<UserDirectory>('userDirectory');
