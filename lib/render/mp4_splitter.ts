/**
 * The streaming splitter: turns an encoder's fragmented-MP4 byte stream into the init
 * segment (ftyp+moov) and media segments (moof+mdat) as bytes arrive.
 */
import { boxType, concat, u32, u64 } from "./mp4_boxes.ts";

export interface SplitterEvents {
  onInit(init: Uint8Array): void;
  onSegment(segment: Uint8Array): void;
}

/**
 * Splits a fragmented-MP4 byte stream into the init segment and media segments as bytes
 * arrive. Holds at most one box (bounded by `maxBoxBytes`, else it throws); other
 * top-level boxes (free, sidx, mfra…) are dropped.
 */
export class BoxSplitter {
  #chunks: Uint8Array[] = [];
  #length = 0;
  #pending: Uint8Array[] = [];
  #pendingType = "";

  constructor(
    private readonly events: SplitterEvents,
    private readonly maxBoxBytes = 8 * 1024 * 1024,
  ) {}

  /** Feeds bytes; emits every complete init segment and segment, in order. */
  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#length += chunk.length;
    for (;;) {
      const head = this.#peek(16);
      if (!head) return;
      let size = u32(head, 0);
      if (size === 1) {
        if (head.length < 16) return;
        size = u64(head, 8);
      }
      if (size < 8 || size > this.maxBoxBytes) {
        throw new Error(`unusable ${boxType(head, 4)} box of ${size} bytes`);
      }
      if (this.#length < size) return;
      this.#box(boxType(head, 4), this.#take(size));
    }
  }

  #box(type: string, bytes: Uint8Array): void {
    if (type === "ftyp" || type === "moof") {
      this.#pending = [bytes];
      this.#pendingType = type;
    } else if (type === "moov" && this.#pendingType === "ftyp") {
      this.events.onInit(concat([...this.#pending, bytes]));
      this.#pending = [];
      this.#pendingType = "";
    } else if (type === "mdat" && this.#pendingType === "moof") {
      this.events.onSegment(concat([...this.#pending, bytes]));
      this.#pending = [];
      this.#pendingType = "";
    }
  }

  #peek(n: number): Uint8Array | null {
    if (this.#length < 8) return null;
    const want = Math.min(n, this.#length);
    const first = this.#chunks[0];
    if (first.length >= want) return first.subarray(0, want);
    const out = new Uint8Array(want);
    let got = 0;
    for (const c of this.#chunks) {
      const use = Math.min(c.length, want - got);
      out.set(c.subarray(0, use), got);
      got += use;
      if (got === want) break;
    }
    return out;
  }

  #take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let got = 0;
    while (got < n) {
      const c = this.#chunks[0];
      const use = Math.min(c.length, n - got);
      out.set(c.subarray(0, use), got);
      got += use;
      if (use === c.length) this.#chunks.shift();
      else this.#chunks[0] = c.subarray(use);
    }
    this.#length -= n;
    return out;
  }
}
