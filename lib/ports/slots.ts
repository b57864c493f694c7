/**
 * Render capacity of this instance (DECISIONS 1, `RENDER_MAX_SESSIONS`). Create reserves
 * a slot for its session as a lease of `RENDER_RESERVATION_S`; the session's first media
 * socket turns the lease into a hold that lasts until the session turns terminal. A lease
 * whose session has no socket by its expiry is released (the session stays `created`);
 * its socket takes a slot again when it opens, if one is free. One tenant's leases never
 * hold more than half of the slots (at least one), so its unconnected sessions cannot
 * starve the others. Expiry is computed on the injected clock whenever the slots are
 * read, so no timer is needed. The slots are in-process: the renderer runs on the
 * instance that owns the session.
 *
 * A session takes as many slots as its picture costs to paint and encode
 * (`slotsForFrame`): one for a 512×512 square, four for a 1280×720 or 720×1280 framing
 * (painted in 3.8 times a square's time, `docs/performance.md`). A tenant's first
 * unconnected lease is never refused for its share, whatever it costs.
 */

/** The frame a slot paints: 512×512. */
const SLOT_PIXELS = 512 * 512;

/** Slots a session of a `width`×`height` picture takes: its pixels in 512×512 squares. */
export function slotsForFrame(width: number, height: number): number {
  return Math.max(1, Math.ceil((width * height) / SLOT_PIXELS));
}

interface Slot {
  tenantId: string;
  /** Slots it takes (`slotsForFrame`). */
  cost: number;
  /** Epoch ms at which an unconnected lease lapses; null once a socket holds it. */
  expiresAt: number | null;
}

/** Why a reservation was refused. */
export type ReserveRefusal = "full" | "tenant_share" | "too_large";

export interface RenderSlotsOptions {
  /** Lease of a reservation without a media socket, in ms. */
  reservationMs: number;
  /** The clock (epoch ms). */
  now: () => number;
}

export class RenderSlots {
  #slots = new Map<string, Slot>();
  readonly #reservationMs: number;
  readonly #now: () => number;

  constructor(
    readonly max: number,
    options: RenderSlotsOptions = { reservationMs: 30_000, now: Date.now },
  ) {
    this.#reservationMs = options.reservationMs;
    this.#now = options.now;
  }

  /** Unconnected leases one tenant may hold: half of the slots, at least one. */
  get tenantShare(): number {
    return Math.max(1, Math.floor(this.max / 2));
  }

  /** Drops the leases that lapsed. */
  #sweep(): void {
    const now = this.#now();
    for (const [id, slot] of this.#slots) {
      if (slot.expiresAt !== null && slot.expiresAt <= now) {
        this.#slots.delete(id);
      }
    }
  }

  /**
   * Reserves a lease of `cost` slots for `sessionId` of `tenantId` (at create). Null when
   * it holds one; else why not: `full` (not enough slots free), `tenant_share` (the
   * tenant's unconnected leases would pass its share) or `too_large` (the instance has
   * fewer slots than it costs). Idempotent per session.
   */
  reserve(
    sessionId: string,
    tenantId: string,
    cost = 1,
  ): ReserveRefusal | null {
    this.#sweep();
    if (this.#slots.has(sessionId)) return null;
    if (this.max > 0 && cost > this.max) return "too_large";
    if (this.#used() + cost > this.max) return "full";
    let leased = 0;
    for (const slot of this.#slots.values()) {
      if (slot.tenantId === tenantId && slot.expiresAt !== null) {
        leased += slot.cost;
      }
    }
    if (leased > 0 && leased + cost > this.tenantShare) return "tenant_share";
    this.#slots.set(sessionId, {
      tenantId,
      cost,
      expiresAt: this.#now() + this.#reservationMs,
    });
    return null;
  }

  /**
   * A media socket for `sessionId` opened: its lease becomes a hold (no expiry), or, when
   * the lease lapsed, `cost` free slots are taken. False when it has none and not
   * enough are free.
   */
  connect(sessionId: string, tenantId: string, cost = 1): boolean {
    this.#sweep();
    const slot = this.#slots.get(sessionId);
    if (slot) {
      slot.expiresAt = null;
      return true;
    }
    if (this.#used() + cost > this.max) return false;
    this.#slots.set(sessionId, { tenantId, cost, expiresAt: null });
    return true;
  }

  /** Slots taken, without a sweep. */
  #used(): number {
    let used = 0;
    for (const slot of this.#slots.values()) used += slot.cost;
    return used;
  }

  /** Frees the slot of `sessionId`; false when it held none. */
  release(sessionId: string): boolean {
    return this.#slots.delete(sessionId);
  }

  /** Whether `sessionId` holds a slot (a lease that has not lapsed, or a hold). */
  has(sessionId: string): boolean {
    this.#sweep();
    return this.#slots.has(sessionId);
  }

  /** The sessions holding a slot. */
  ids(): string[] {
    this.#sweep();
    return [...this.#slots.keys()];
  }

  /** Slots in use (a session takes its cost). */
  get inUse(): number {
    this.#sweep();
    return this.#used();
  }

  /** Seconds until a lease lapses at the earliest (a `retry_after` hint), at least 1. */
  retryAfterS(): number {
    this.#sweep();
    let first = Infinity;
    for (const slot of this.#slots.values()) {
      if (slot.expiresAt !== null) first = Math.min(first, slot.expiresAt);
    }
    if (first === Infinity) return 15;
    return Math.max(1, Math.ceil((first - this.#now()) / 1000));
  }
}
