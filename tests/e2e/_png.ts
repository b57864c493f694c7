/**
 * Reads the pixels of a PNG screenshot (8-bit RGB or RGBA, not interlaced: what
 * Chromium writes), for tests that look at what the page really shows.
 */

export interface Picture {
  width: number;
  height: number;
  /** RGBA, row after row. */
  rgba: Uint8Array;
}

/** Decodes `png`; throws on a format it does not handle. */
export async function decodePng(png: Uint8Array): Promise<Picture> {
  const dv = new DataView(png.buffer, png.byteOffset, png.byteLength);
  let at = 8;
  let width = 0, height = 0, channels = 0;
  const idat: Uint8Array[] = [];
  while (at < png.length) {
    const len = dv.getUint32(at);
    const type = new TextDecoder().decode(png.subarray(at + 4, at + 8));
    const body = png.subarray(at + 8, at + 8 + len);
    if (type === "IHDR") {
      width = dv.getUint32(at + 8);
      height = dv.getUint32(at + 12);
      const depth = body[8], colour = body[9], interlace = body[12];
      if (depth !== 8 || interlace !== 0 || (colour !== 2 && colour !== 6)) {
        throw new Error(`unsupported PNG: depth ${depth} colour ${colour}`);
      }
      channels = colour === 6 ? 4 : 3;
    } else if (type === "IDAT") idat.push(body);
    at += 12 + len;
  }
  const raw = new Uint8Array(
    await new Response(
      new Blob(idat as BlobPart[]).stream().pipeThrough(
        new DecompressionStream("deflate"),
      ),
    ).arrayBuffer(),
  );
  const stride = width * channels;
  const rgba = new Uint8Array(width * height * 4);
  let prev = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.slice(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? line[i - channels] : 0;
      const b = prev[i];
      const c = i >= channels ? prev[i - channels] : 0;
      let add = 0;
      if (filter === 1) add = a;
      else if (filter === 2) add = b;
      else if (filter === 3) add = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        add = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      line[i] = (line[i] + add) & 0xff;
    }
    for (let x = 0; x < width; x++) {
      for (let k = 0; k < 4; k++) {
        rgba[(y * width + x) * 4 + k] = k < channels
          ? line[x * channels + k]
          : 255;
      }
    }
    prev = line;
  }
  return { width, height, rgba };
}

/** The RGB of pixel (x, y). */
export function pixel(
  p: Picture,
  x: number,
  y: number,
): [number, number, number] {
  const i = (Math.round(y) * p.width + Math.round(x)) * 4;
  return [p.rgba[i], p.rgba[i + 1], p.rgba[i + 2]];
}
