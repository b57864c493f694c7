/**
 * Render capacity of this instance (DECISIONS 1, `RENDER_MAX_SESSIONS`): a slot is
 * reserved per session at create and released when the session turns terminal. The
 * slots are in-process because the renderer runs on the instance owning the session.
 */
export class RenderSlots {
  #held = new Set<string>();

  constructor(readonly max: number) {}

  /** Reserves a slot for `sessionId`; false when none is free. Idempotent per session. */
  tryReserve(sessionId: string): boolean {
    if (this.#held.has(sessionId)) return true;
    if (this.#held.size >= this.max) return false;
    this.#held.add(sessionId);
    return true;
  }

  /** Frees the slot of `sessionId`; false when it held none. */
  release(sessionId: string): boolean {
    return this.#held.delete(sessionId);
  }

  /** Whether `sessionId` holds a slot. */
  has(sessionId: string): boolean {
    return this.#held.has(sessionId);
  }

  /** Slots in use. */
  /** The sessions holding a slot. */
  ids(): string[] {
    return [...this.#held];
  }

  get inUse(): number {
    return this.#held.size;
  }
}
