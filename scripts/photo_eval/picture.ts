/**
 * Pictures of the evaluation: I420 frames (as the painter draws them) to RGB, tiles
 * cut around the face and scaled, and a contact sheet written as PNG by ffmpeg with
 * each tile's label drawn in (when the system has the DejaVu font).
 */
import { ffmpegPath } from "../../lib/render/ffmpeg.ts";
import type { RgbFrame } from "./measure.ts";

/** An I420 frame (BT.601 limited range, as lib/render/raster.ts draws) to RGB. */
export function i420ToRgb(
  yuv: Uint8Array,
  width: number,
  height: number,
): RgbFrame {
  const out = new Uint8Array(width * height * 3);
  const n = width * height, cw = width >> 1;
  const byte = (v: number) => Math.min(255, Math.max(0, Math.round(v)));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const c = (y >> 1) * cw + (x >> 1);
      const l = 1.164 * (yuv[y * width + x] - 16);
      const u = yuv[n + c] - 128, v = yuv[n + n / 4 + c] - 128;
      const o = 3 * (y * width + x);
      out[o] = byte(l + 1.596 * v);
      out[o + 1] = byte(l - 0.392 * u - 0.813 * v);
      out[o + 2] = byte(l + 2.017 * u);
    }
  }
  return { width, height, data: out };
}

/** A square region of a frame. */
export interface Square {
  x: number;
  y: number;
  side: number;
}

/** The face's square in a prepared portrait: its mesh's extent, 1.2 times, in frame. */
export function faceSquare(
  landmarks: ArrayLike<number>,
  width: number,
  height: number,
): Square {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (let i = 0; i < 468; i++) {
    x0 = Math.min(x0, landmarks[i * 3]);
    x1 = Math.max(x1, landmarks[i * 3]);
    y0 = Math.min(y0, landmarks[i * 3 + 1]);
    y1 = Math.max(y1, landmarks[i * 3 + 1]);
  }
  const side = Math.min(
    width,
    height,
    Math.round(Math.max(x1 - x0, y1 - y0) * 1.2),
  );
  const x = Math.round(
    Math.min(width - side, Math.max(0, (x0 + x1) / 2 - side / 2)),
  );
  const y = Math.round(
    Math.min(height - side, Math.max(0, (y0 + y1) / 2 - side / 2)),
  );
  return { x, y, side };
}

/** `sq` of `f` scaled (nearest neighbour over box averages) to `size`×`size` RGB. */
export function tile(f: RgbFrame, sq: Square, size: number): Uint8Array {
  const out = new Uint8Array(size * size * 3);
  const k = sq.side / size;
  for (let ty = 0; ty < size; ty++) {
    for (let tx = 0; tx < size; tx++) {
      const sx0 = Math.floor(sq.x + tx * k), sy0 = Math.floor(sq.y + ty * k);
      const sx1 = Math.max(sx0 + 1, Math.floor(sq.x + (tx + 1) * k));
      const sy1 = Math.max(sy0 + 1, Math.floor(sq.y + (ty + 1) * k));
      let r = 0, g = 0, b = 0, n = 0;
      for (let y = sy0; y < sy1 && y < f.height; y++) {
        for (let x = sx0; x < sx1 && x < f.width; x++) {
          const i = 3 * (y * f.width + x);
          r += f.data[i], g += f.data[i + 1], b += f.data[i + 2], n++;
        }
      }
      const o = 3 * (ty * size + tx);
      if (n > 0) (out[o] = r / n, out[o + 1] = g / n, out[o + 2] = b / n);
    }
  }
  return out;
}

/** A contact sheet being laid out: square tiles on a grid, each with a label. */
export class Sheet {
  readonly data: Uint8Array;
  readonly labels: Array<{ x: number; y: number; text: string }> = [];
  constructor(readonly width: number, readonly height: number) {
    this.data = new Uint8Array(width * height * 3);
  }

  /** Puts a `size`×`size` RGB tile at (`x`, `y`) with `label`. */
  put(x: number, y: number, size: number, rgb: Uint8Array, label: string) {
    for (let r = 0; r < size && y + r < this.height; r++) {
      const row = rgb.subarray(r * size * 3, (r + 1) * size * 3);
      const w = Math.min(size, this.width - x);
      this.data.set(row.subarray(0, w * 3), ((y + r) * this.width + x) * 3);
    }
    if (label) this.labels.push({ x: x + 4, y: y + 4, text: label });
  }

  /** Writes the sheet as PNG to `file`, with `caption` along its bottom. */
  async write(file: string, caption: string): Promise<void> {
    const font = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf";
    const hasFont = await Deno.stat(font).then(() => true, () => false);
    const esc = (s: string) => s.replace(/[\\:'%,]/g, (c) => `\\${c}`);
    const draw = (x: number, y: number, text: string, size: number) =>
      `drawtext=fontfile=${font}:text='${
        esc(text)
      }':fontsize=${size}:fontcolor=white:borderw=2:x=${x}:y=${y}`;
    const filters = hasFont
      ? [
        ...this.labels.map((l) => draw(l.x, l.y, l.text, 13)),
        draw(6, this.height - 20, caption, 14),
      ].join(",")
      : "null";
    const child = new Deno.Command(await ffmpegPath(), {
      args: [
        "-v",
        "error",
        "-y",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-s",
        `${this.width}x${this.height}`,
        "-i",
        "-",
        "-vf",
        filters,
        "-frames:v",
        "1",
        file,
      ],
      stdin: "piped",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const w = child.stdin.getWriter();
    await w.write(this.data);
    await w.close();
    const r = await child.output();
    if (!r.success) {
      throw new Error(
        `ffmpeg could not write ${file}: ${new TextDecoder().decode(r.stderr)}`,
      );
    }
  }
}
