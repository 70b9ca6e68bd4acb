/**
 * The realm's declared attribute vocabulary ("before binding
 * a gate that needs `clearance`, the attribute must be declared"; the SDK's
 * `declare_attribute` / `list_attributes` / `deprecate_attribute` /
 * `withdraw_attribute`). Transport-free; docs/attributes.md.
 *
 * Lifecycle declared → deprecated → withdrawn (a PUT revives). What it
 * changes:
 * - values: a subject write may add or change a value only of an attribute
 *   that is undeclared (the vocabulary is open until a name is declared) or
 *   in the `declared` state, and of its declared type; values already held
 *   are kept as they are;
 * - tokens: a `sensitive` or `withdrawn` attribute is stored on subjects but
 *   never issued as a claim, so never reaches X-User-Attributes or a gate.
 */
import { z } from 'zod';
import { AuthErrors } from './errors.ts';
import type { AttributeSchemaRow, AuthStore } from './store.ts';
import { isStandardClaim } from './tokens.ts';

/** Attribute names become top-level token claims and `X-User-<Name>` headers: keep them header-safe. */
export const ATTRIBUTE_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
export const ATTRIBUTE_NAME_RULE = 'letters, digits, _ and -, at most 64, not starting with a digit or -';

export const ATTRIBUTE_TYPES = ['string', 'int', 'bool', 'string[]'] as const;
export const ATTRIBUTE_AUTHORITIES = ['local_admin', 'self', 'mesh_peer', 'system'] as const;

export interface AttributeShape {
  type: (typeof ATTRIBUTE_TYPES)[number];
  sensitive: boolean;
  authority: (typeof ATTRIBUTE_AUTHORITIES)[number];
  schema_version: string;
}

/** The wire shape of the SDK's `AttributeSchema`; the view is typed by it. */
export const attributeAnswer = z.object({
  name: z.string(),
  type: z.enum(ATTRIBUTE_TYPES),
  state: z.enum(['declared', 'deprecated', 'withdrawn']),
  authority: z.enum(ATTRIBUTE_AUTHORITIES),
  sensitive: z.boolean(),
  schema_version: z.string(),
  declared_at: z.string(),
  deprecated_at: z.string().nullable(),
  withdrawn_at: z.string().nullable(),
  declared_by: z.string().nullable(),
});

/** What a DELETE did: deprecated, or withdrawn (`forced` when subjects still held a value). */
export const attributeRetiredAnswer = z.object({
  name: z.string(),
  state: z.enum(['deprecated', 'withdrawn']),
  subjects_holding_value: z.number().int(),
  forced: z.boolean().optional(),
});
type AttributeRetired = z.output<typeof attributeRetiredAnswer>;

export function attributeView(row: AttributeSchemaRow): z.output<typeof attributeAnswer> {
  return {
    name: row.name,
    type: row.type,
    state: row.state,
    authority: row.authority,
    sensitive: row.sensitive,
    schema_version: row.schemaVersion,
    declared_at: row.declaredAt,
    deprecated_at: row.deprecatedAt,
    withdrawn_at: row.withdrawnAt,
    declared_by: row.declaredBy,
  };
}

const VALUE_CHECKS: Record<AttributeShape['type'], (value: unknown) => boolean> = {
  string: (v) => typeof v === 'string',
  int: (v) => Number.isSafeInteger(v),
  bool: (v) => typeof v === 'boolean',
  'string[]': (v) => Array.isArray(v) && v.every((item) => typeof item === 'string'),
};

export class AttributeVocabulary {
  constructor(
    private readonly store: AuthStore,
    private readonly now: () => Date,
    /** Called when what tokens carry may have changed, so cached principals are dropped. */
    private readonly onChange: () => void,
  ) {}

  list(includeDeprecated: boolean) {
    const rows = this.store.listAttributeSchema().filter((row) => includeDeprecated || row.state === 'declared');
    return { attributes: rows.map(attributeView), schema_version: 'v0.3.6' };
  }

  get(name: string) {
    return attributeView(this.#find(name));
  }

  /** Idempotent for the same shape; revives a deprecated or withdrawn name; a declared name keeps its shape. */
  declare(name: string, shape: AttributeShape, actorId: string) {
    if (isStandardClaim(name)) throw AuthErrors.make.attribute_name_reserved({ names: [name] });
    const existing = this.store.attributeSchema(name);
    if (existing?.state === 'declared') {
      const stored: AttributeShape = {
        type: existing.type,
        sensitive: existing.sensitive,
        authority: existing.authority,
        schema_version: existing.schemaVersion,
      };
      const changed = (Object.keys(shape) as (keyof AttributeShape)[]).filter((k) => stored[k] !== shape[k]);
      if (changed.length > 0) throw AuthErrors.make.attribute_shape_conflict({ name, fields: changed });
      return { created: false, attribute: attributeView(existing) };
    }
    // Values subjects already hold (of a deprecated or withdrawn name, or set before the first
    // declaration) are issued under the declaration: they must be of its type.
    const misfits = this.#holding(name).filter((value) => value !== null && !VALUE_CHECKS[shape.type](value)).length;
    if (misfits > 0)
      throw AuthErrors.make.attribute_shape_conflict({ name, fields: ['type'], subjects_holding_other_type: misfits });
    const row: AttributeSchemaRow = {
      name,
      type: shape.type,
      state: 'declared',
      authority: shape.authority,
      sensitive: shape.sensitive,
      schemaVersion: shape.schema_version,
      declaredAt: existing?.declaredAt ?? this.now().toISOString(),
      deprecatedAt: null,
      withdrawnAt: null,
      declaredBy: actorId,
    };
    this.store.putAttributeSchema(row);
    this.onChange();
    return { created: existing === undefined, attribute: attributeView(row) };
  }

  /** DELETE without `force`: nothing new takes the name; held values and their claims stay. */
  deprecate(name: string): AttributeRetired {
    const row = this.#find(name);
    if (row.state === 'declared')
      this.store.putAttributeSchema({ ...row, state: 'deprecated', deprecatedAt: this.now().toISOString() });
    const state = row.state === 'withdrawn' ? 'withdrawn' : 'deprecated';
    return { name, state, subjects_holding_value: this.#holders(name) };
  }

  /**
   * DELETE with `force`: the name leaves tokens (held values stay stored); refused while subjects hold a value unless
   * forced.
   */
  withdraw(name: string, force: boolean): AttributeRetired & { forced: boolean } {
    const row = this.#find(name);
    const holding = this.#holders(name);
    if (holding > 0 && !force) throw AuthErrors.make.attribute_in_use({ name, subjects_holding_value: holding });
    if (row.state !== 'withdrawn') {
      const at = this.now().toISOString();
      this.store.putAttributeSchema({
        ...row,
        state: 'withdrawn',
        deprecatedAt: row.deprecatedAt ?? at,
        withdrawnAt: at,
      });
      this.onChange();
    }
    return { name, state: 'withdrawn' as const, subjects_holding_value: holding, forced: force && holding > 0 };
  }

  /**
   * A local subject's attributes before they are written: reserved claim
   * names refused; a new or changed value only for an undeclared or
   * declared name, and of its type. Values `previous` already holds pass.
   */
  checkValues(next: Readonly<Record<string, unknown>>, previous: Readonly<Record<string, unknown>> = {}): void {
    const reserved = Object.keys(next).filter(isStandardClaim);
    if (reserved.length > 0) throw AuthErrors.make.attribute_name_reserved({ names: reserved });
    const declared = new Map(this.store.listAttributeSchema().map((row) => [row.name, row]));
    for (const [name, value] of Object.entries(next)) {
      const schema = declared.get(name);
      // null clears a value, which every state allows.
      if (!schema || value === null || JSON.stringify(previous[name]) === JSON.stringify(value)) continue;
      if (schema.state !== 'declared') throw AuthErrors.make.attribute_not_declared({ name, state: schema.state });
      if (!VALUE_CHECKS[schema.type](value)) throw AuthErrors.make.attribute_value_invalid({ name, type: schema.type });
    }
  }

  /** The attributes a token carries: sensitive and withdrawn ones left out. */
  issued(attributes: Readonly<Record<string, unknown>>): Record<string, unknown> {
    const hidden = new Set(
      this.store
        .listAttributeSchema()
        .filter((row) => row.sensitive || row.state === 'withdrawn')
        .map((row) => row.name),
    );
    if (hidden.size === 0) return { ...attributes };
    return Object.fromEntries(Object.entries(attributes).filter(([name]) => !hidden.has(name)));
  }

  /** The values local subjects hold for the name (brokered users' attributes come from their peer). */
  #holding(name: string): unknown[] {
    return this.store
      .listUsers()
      .filter((user) => user.source === 'local' && Object.hasOwn(user.attributes, name))
      .map((user) => user.attributes[name]);
  }

  #holders(name: string): number {
    return this.#holding(name).length;
  }

  #find(name: string): AttributeSchemaRow {
    const row = this.store.attributeSchema(name);
    if (!row) throw AuthErrors.make.attribute_not_found({ name });
    return row;
  }
}
