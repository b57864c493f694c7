/**
 * In-process mutual exclusion per key. Used where commits on one KV key would otherwise
 * race each other inside one instance (e.g. a tenant's open-session counter): serialising
 * them here turns a storm of versionstamp conflicts and retries into a queue, while the
 * versionstamp check still guards against other instances.
 */

export class KeyedLock {
  private tails = new Map<string, Promise<void>>();

  /** Runs `fn` after every earlier `run` for `key` has settled. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => release = r);
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Keys with a queue right now (for tests and metrics). */
  get size(): number {
    return this.tails.size;
  }
}
