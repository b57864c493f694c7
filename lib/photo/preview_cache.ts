/**
 * The console's avatar previews as built PNGs, kept per KV handle so each is built once
 * (decompress, convert, encode: work on the event loop that 20 previews a second once
 * turned into 306 ms of `/healthz` latency). Least recently used first out, bounded by
 * bytes; keyed by tenant and avatar, each entry holding the ETag it was built for (the
 * avatar's stored SHA-256), so one tenant's entry never answers for another and a
 * changed avatar is built again. Removing an avatar forgets its entry.
 */

/** Preview bytes kept per KV handle (a 512×512 portrait's PNG is about 400 KiB). */
export const PHOTO_PREVIEW_CACHE_BYTES = 16 * 1024 * 1024;

interface Entry {
  etag: string;
  png: Uint8Array;
}

/** A build under way; `live` false once its avatar was forgotten meanwhile. */
interface Build {
  png: Promise<Uint8Array | null>;
  live: boolean;
}

/** A bounded LRU of built previews; concurrent misses of one preview share one build. */
export class PreviewCache {
  #entries = new Map<string, Entry>();
  #building = new Map<string, Build>();
  #bytes = 0;
  /** Previews built so far (every miss that ran its `build`). */
  builds = 0;

  constructor(readonly maxBytes = PHOTO_PREVIEW_CACHE_BYTES) {}

  /** Bytes of the previews kept. */
  get bytes(): number {
    return this.#bytes;
  }

  /** How many previews are kept. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * `tenantId`'s preview of `avatarId` as built for `etag`: from memory, or by `build`
   * (null: nothing to show, not kept).
   */
  async get(
    tenantId: string,
    avatarId: string,
    etag: string,
    build: () => Promise<Uint8Array | null>,
  ): Promise<Uint8Array | null> {
    const key = keyOf(tenantId, avatarId);
    const hit = this.#entries.get(key);
    if (hit?.etag === etag) {
      this.#entries.delete(key); // most recently used goes last
      this.#entries.set(key, hit);
      return hit.png;
    }
    const flight = `${key}\u0000${etag}`;
    const joined = this.#building.get(flight);
    if (joined) return await joined.png;
    this.builds++;
    const b: Build = { png: build(), live: true };
    this.#building.set(flight, b);
    try {
      const png = await b.png;
      if (png && b.live) this.#put(key, { etag, png });
      return png;
    } finally {
      if (this.#building.get(flight) === b) this.#building.delete(flight);
    }
  }

  /** Forgets `tenantId`'s preview of `avatarId`, and what a build under way makes. */
  forget(tenantId: string, avatarId: string): void {
    const key = keyOf(tenantId, avatarId);
    this.#drop(key);
    for (const [flight, b] of this.#building) {
      if (flight.startsWith(`${key}\u0000`)) {
        b.live = false;
        this.#building.delete(flight);
      }
    }
  }

  #put(key: string, entry: Entry): void {
    this.#drop(key);
    if (entry.png.length > this.maxBytes) return;
    this.#entries.set(key, entry);
    this.#bytes += entry.png.length;
    for (const [old, e] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(old);
      this.#bytes -= e.png.length;
    }
  }

  #drop(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    this.#entries.delete(key);
    this.#bytes -= e.png.length;
  }
}

function keyOf(tenantId: string, avatarId: string): string {
  return `${tenantId}\u0000${avatarId}`;
}

const caches = new WeakMap<Deno.Kv, PreviewCache>();

/** The preview cache of the app on `kv`. */
export function previewCacheOf(kv: Deno.Kv): PreviewCache {
  let cache = caches.get(kv);
  if (!cache) caches.set(kv, cache = new PreviewCache());
  return cache;
}
