/**
 * Decoding an uploaded portrait (JPEG or PNG) in pure JS, with DECISIONS 12's limits
 * checked from the bytes and the header before any pixel is decoded, and the JPEG's EXIF
 * orientation applied (jpeg-js ignores it).
 */
import jpeg from "jpeg-js";
import { convertIndexedToRgb, decode as decodePng } from "fast-png";
import { guardPng, readPngHeader } from "./png_guard.ts";
import { readJpegLayout } from "./jpeg_layout.ts";
import { PhotoRefusal } from "./refusal.ts";

/** Largest accepted upload, in bytes. */
export const MAX_PHOTO_BYTES = 8 * 1024 * 1024;
/** Largest accepted side, in pixels. */
export const MAX_PHOTO_SIDE = 4096;

/**
 * Most scans a JPEG may have. jpeg-js walks every block of the image once per scan, on
 * the event loop: 20,000 progressive scans of a 4096×4096 frame in 716 KiB held it 27 s,
 * so 8 MiB of them over 5 minutes. Encoders write about 10 (libjpeg's progressive
 * script), rarely 30.
 */
export const MAX_JPEG_SCANS = 100;

/** 8-bit RGB pixels, row-major, no padding. */
export interface RgbImage {
  width: number;
  height: number;
  data: Uint8Array;
}

export type PhotoFormat = "jpeg" | "png";

export interface PhotoHeader {
  format: PhotoFormat;
  /** As stored, before the EXIF orientation. */
  width: number;
  height: number;
  /** EXIF orientation 1…8 (1 for PNG and for JPEGs without one). */
  orientation: number;
}

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Reads format, size and orientation from the header; refuses what breaks the limits. */
export function readPhotoHeader(bytes: Uint8Array): PhotoHeader {
  if (bytes.length > MAX_PHOTO_BYTES) {
    throw new PhotoRefusal("larger than 8 MiB");
  }
  let header: PhotoHeader;
  if (
    bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 &&
    bytes[2] === 0xff
  ) {
    const layout = readJpegLayout(bytes, MAX_JPEG_SCANS);
    if (layout.scans > MAX_JPEG_SCANS) {
      throw new PhotoRefusal("corrupted image");
    }
    const { width, height, orientation } = layout;
    header = { format: "jpeg", width, height, orientation };
  } else if (PNG_MAGIC.every((b, i) => bytes[i] === b)) {
    header = pngHeader(bytes);
  } else {
    throw new PhotoRefusal("not a JPEG or PNG");
  }
  if (header.width < 1 || header.height < 1) {
    throw new PhotoRefusal("corrupted image");
  }
  if (header.width > MAX_PHOTO_SIDE || header.height > MAX_PHOTO_SIDE) {
    throw new PhotoRefusal("larger than 4096 px");
  }
  return header;
}

/** Decodes a JPEG or PNG to RGB, upright (EXIF orientation applied). */
export function decodePhoto(bytes: Uint8Array): RgbImage {
  const header = readPhotoHeader(bytes);
  let image: RgbImage;
  try {
    image = header.format === "jpeg" ? decodeJpeg(bytes) : decodePngRgb(bytes);
  } catch (e) {
    if (e instanceof PhotoRefusal) throw e;
    throw new PhotoRefusal("corrupted image");
  }
  if (image.width !== header.width || image.height !== header.height) {
    throw new PhotoRefusal("corrupted image");
  }
  return orient(image, header.orientation);
}

function decodeJpeg(bytes: Uint8Array): RgbImage {
  const out = jpeg.decode(bytes, {
    useTArray: true,
    formatAsRGBA: false,
    // A truncated or damaged scan throws instead of decoding as grey.
    tolerantDecoding: false,
    maxResolutionInMP: (MAX_PHOTO_SIDE * MAX_PHOTO_SIDE) / 1e6 + 1,
    // jpeg-js's own estimate for a 4096×4096 photo is above 256 MB (measured: a
    // 4096×4096 upload peaks near 1 GB of RSS while prepared); the side limit bounds it.
    maxMemoryUsageInMB: 1024,
  });
  return { width: out.width, height: out.height, data: out.data };
}

function decodePngRgb(bytes: Uint8Array): RgbImage {
  // fast-png inflates without bound: the guard bounds it by the header first.
  const png = decodePng(guardPng(bytes), { checkCrc: true });
  const { width, height } = png;
  let data = png.data;
  let channels = png.channels;
  if (png.palette) {
    data = convertIndexedToRgb(png);
    channels = data.length / (width * height); // 3, or 4 with a tRNS chunk
  }
  // fast-png leaves 1-, 2- and 4-bit grey packed, as many samples a byte.
  if (!png.palette && png.depth < 8) {
    data = unpackGrey(data, width, height, png.depth);
  }
  const shift = png.depth === 16 && !png.palette ? 8 : 0;
  const n = width * height;
  if (data.length < n * channels) throw new PhotoRefusal("corrupted image");
  const rgb = new Uint8Array(n * 3);
  const hasAlpha = channels === 2 || channels === 4;
  const colour = channels >= 3;
  const max = shift ? 65535 : 255;
  for (let i = 0; i < n; i++) {
    const s = i * channels;
    let r = data[s] >> shift;
    let g = colour ? data[s + 1] >> shift : r;
    let b = colour ? data[s + 2] >> shift : r;
    if (hasAlpha) {
      // Transparent parts become white, as a viewer shows them on a page.
      const a = data[s + channels - 1] / max;
      r = Math.round(r * a + 255 * (1 - a));
      g = Math.round(g * a + 255 * (1 - a));
      b = Math.round(b * a + 255 * (1 - a));
    }
    rgb[i * 3] = r;
    rgb[i * 3 + 1] = g;
    rgb[i * 3 + 2] = b;
  }
  return { width, height, data: rgb };
}

/** 1-, 2- or 4-bit grey samples (each row padded to a byte) as 8-bit ones. */
function unpackGrey(
  packed: ArrayLike<number>,
  width: number,
  height: number,
  depth: number,
): Uint8Array {
  const stride = Math.ceil((width * depth) / 8);
  if (packed.length < stride * height) {
    throw new PhotoRefusal("corrupted image");
  }
  const max = (1 << depth) - 1;
  const out = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const bit = x * depth;
      const byte = packed[y * stride + (bit >> 3)];
      const v = (byte >> (8 - depth - (bit & 7))) & max;
      out[y * width + x] = Math.round((v * 255) / max);
    }
  }
  return out;
}

function pngHeader(bytes: Uint8Array): PhotoHeader {
  const { width, height } = readPngHeader(bytes);
  return { format: "png", width, height, orientation: 1 };
}

/** Turns the stored pixels upright for EXIF orientation `o` (1…8). */
export function orient(image: RgbImage, o: number): RgbImage {
  if (o <= 1 || o > 8) return image;
  const { width: w, height: h, data } = image;
  const swap = o >= 5;
  const ow = swap ? h : w;
  const oh = swap ? w : h;
  const out = new Uint8Array(data.length);
  for (let y = 0; y < oh; y++) {
    for (let x = 0; x < ow; x++) {
      let sx: number, sy: number;
      switch (o) {
        case 2:
          [sx, sy] = [w - 1 - x, y];
          break;
        case 3:
          [sx, sy] = [w - 1 - x, h - 1 - y];
          break;
        case 4:
          [sx, sy] = [x, h - 1 - y];
          break;
        case 5:
          [sx, sy] = [y, x];
          break;
        case 6:
          [sx, sy] = [y, h - 1 - x];
          break;
        case 7:
          [sx, sy] = [w - 1 - y, h - 1 - x];
          break;
        default:
          [sx, sy] = [w - 1 - y, x];
          break; // 8
      }
      const s = (sy * w + sx) * 3;
      const d = (y * ow + x) * 3;
      out[d] = data[s];
      out[d + 1] = data[s + 1];
      out[d + 2] = data[s + 2];
    }
  }
  return { width: ow, height: oh, data: out };
}
