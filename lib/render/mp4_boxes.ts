/**
 * ISO-BMFF box primitives: where the boxes of a buffer lie, how to find a box's children,
 * and the big-endian reads and writes the MP4 modules share.
 */

/** A box's place inside a buffer. `end` is exclusive; the payload starts at `bodyStart`. */
export interface Box {
  type: string;
  start: number;
  bodyStart: number;
  end: number;
}

const latin1 = new TextDecoder("latin1");

/** Big-endian unsigned 32-bit integer at `at`. */
export function u32(b: Uint8Array, at: number): number {
  return ((b[at] << 24) >>> 0) + (b[at + 1] << 16) + (b[at + 2] << 8) +
    b[at + 3];
}

/** Big-endian unsigned 64-bit integer at `at` (exact below 2^53). */
export function u64(b: Uint8Array, at: number): number {
  return u32(b, at) * 2 ** 32 + u32(b, at + 4);
}

/** The four-character type at `at`. */
export function boxType(b: Uint8Array, at: number): string {
  return latin1.decode(b.subarray(at, at + 4));
}

/** Lists the boxes laid end to end in `b[start, end)`. Throws on a truncated box. */
export function parseBoxes(
  b: Uint8Array,
  start = 0,
  end = b.length,
): Box[] {
  const boxes: Box[] = [];
  let at = start;
  while (at + 8 <= end) {
    let size = u32(b, at);
    let header = 8;
    if (size === 1) {
      size = u64(b, at + 8);
      header = 16;
    } else if (size === 0) {
      size = end - at;
    }
    if (size < header || at + size > end) {
      throw new Error(`truncated ${boxType(b, at + 4)} box`);
    }
    boxes.push({
      type: boxType(b, at + 4),
      start: at,
      bodyStart: at + header,
      end: at + size,
    });
    at += size;
  }
  return boxes;
}

/** The first child of `parent` with `type` (children start `skip` bytes into its body). */
export function child(
  b: Uint8Array,
  parent: Box,
  type: string,
  skip = 0,
): Box | undefined {
  return parseBoxes(b, parent.bodyStart + skip, parent.end).find((c) =>
    c.type === type
  );
}

/** Every child of `parent` with `type`. */
export function children(b: Uint8Array, parent: Box, type: string): Box[] {
  return parseBoxes(b, parent.bodyStart, parent.end).filter((c) =>
    c.type === type
  );
}

/** The box reached from `root` by following child `types` in turn. */
export function path(
  b: Uint8Array,
  root: Box,
  types: string[],
): Box | undefined {
  let cur: Box | undefined = root;
  for (const t of types) {
    if (!cur) return undefined;
    cur = child(b, cur, t);
  }
  return cur;
}

/** Concatenates byte arrays. */
export function concat(parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const ascii = new TextEncoder();

/** Big-endian 32 bits of `n`. */
export function u32be(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n >>> 0);
  return b;
}

/** Big-endian 16 bits of `n`. */
export function u16be(n: number): Uint8Array {
  return new Uint8Array([(n >> 8) & 0xff, n & 0xff]);
}

/** Big-endian 64 bits of `n` (exact below 2^53). */
export function u64be(n: number): Uint8Array {
  return concat([u32be(Math.floor(n / 2 ** 32)), u32be(n % 2 ** 32)]);
}

/** `n` zero bytes. */
export function zeros(n: number): Uint8Array {
  return new Uint8Array(n);
}

/** A box: size, type, then `parts`. */
export function box(type: string, ...parts: Uint8Array[]): Uint8Array {
  const body = concat(parts);
  return concat([u32be(8 + body.length), ascii.encode(type), body]);
}

/** A full box: version and flags before `parts`. */
export function fullBox(
  type: string,
  version: number,
  flags: number,
  ...parts: Uint8Array[]
): Uint8Array {
  return box(
    type,
    u32be(((version & 0xff) << 24) | (flags & 0xffffff)),
    ...parts,
  );
}
