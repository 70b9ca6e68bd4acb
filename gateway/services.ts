/**
 * Typed keys for what one domain provides to the gateway or to another
 * domain (connect-es ContextValues style), so nothing is a global singleton
 * and the gateway knows a domain only by the interface it provides.
 */
export interface ServiceKey<T> {
  readonly id: symbol;
  readonly name: string;
  /** Phantom field carrying T; never set. */
  readonly __type?: T;
}

export function createServiceKey<T>(name: string): ServiceKey<T> {
  return { id: Symbol(name), name };
}

export class ServiceRegistry {
  readonly #values = new Map<symbol, unknown>();

  provide<T>(key: ServiceKey<T>, value: T): void {
    if (this.#values.has(key.id)) throw new Error(`service '${key.name}' is provided twice`);
    this.#values.set(key.id, value);
  }

  /** Throws when absent: a module listed before its provider is a wiring bug. */
  get<T>(key: ServiceKey<T>): T {
    if (!this.#values.has(key.id))
      throw new Error(`service '${key.name}' is not provided (check the order in domains/index.ts)`);
    return this.#values.get(key.id) as T;
  }

  find<T>(key: ServiceKey<T>): T | undefined {
    return this.#values.get(key.id) as T | undefined;
  }
}
