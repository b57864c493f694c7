/**
 * The REST fuzzer's cases for the console's photo upload (issue 22's second review):
 * multipart POSTs to `/admin/avatars` from a signed-in console, carrying what a hostile
 * tenant administrator would send: PNGs whose image data or ICC profile inflates far
 * past their pixels, progressive JPEGs of thousands of scans, a second IHDR, the real
 * portraits damaged or cut short, random bytes, and forms of tens of thousands of parts.
 * Each must be answered (400, 403, 413; 201 for a portrait that passes) without a 5xx,
 * a hang or a stalled bystander.
 */
import { deflateSync } from "node:zlib";
import type { Rng } from "./_lib.ts";
import {
  concat,
  pngChunk,
  pngIhdr,
  pngOf,
  progressiveJpeg,
} from "./_images.ts";
import type { RestCase } from "./rest_cases.ts";

const enc = new TextEncoder();
const PORTRAITS = ["grace_hopper.jpg", "astronaut.png"].map((name) =>
  Deno.readFileSync(
    new URL(`../tests/fixtures/photo/${name}`, import.meta.url),
  )
);

/** A signed-in console: its cookie, the forms' CSRF token, the origin to send. */
export interface ConsoleTarget {
  cookie: string;
  csrf: string;
  origin: string;
  tenant: string;
}

/** Signs in to the console at `base` with `key` (as the sign-in form does). */
export async function signInConsole(
  base: string,
  key: string,
  tenant: string,
): Promise<ConsoleTarget> {
  const cookieOf = (res: Response, name: string) =>
    res.headers.getSetCookie().map((c) => c.split(";")[0]).find((c) =>
      c.startsWith(`${name}=`)
    ) ?? "";
  const csrfOf = (html: string) =>
    /name="_csrf" value="([^"]*)"/.exec(html)?.[1] ?? "";
  const origin = new URL(base).origin;
  const login = await fetch(`${base}/admin/login`);
  const form = new URLSearchParams({
    _csrf: csrfOf(await login.text()),
    next: "/admin/avatars",
    api_key: key,
  });
  const res = await fetch(`${base}/admin/login`, {
    method: "POST",
    headers: { cookie: cookieOf(login, "avtr_console_login"), origin },
    body: form,
    redirect: "manual",
  });
  await res.body?.cancel();
  const cookie = cookieOf(res, "avtr_console");
  if (!cookie) throw new Error(`console sign-in: ${res.status}`);
  const page = await fetch(`${base}/admin/avatars?tenant=${tenant}`, {
    headers: { cookie },
  });
  return { cookie, csrf: csrfOf(await page.text()), origin, tenant };
}

const bombs = new Map<number, Uint8Array>();
/** Deflated zeros inflating to `mib` MiB (made once per size). */
function zeros(mib: number): Uint8Array {
  let z = bombs.get(mib);
  if (!z) bombs.set(mib, z = deflateSync(new Uint8Array(mib << 20)));
  return z;
}

/** A hostile or damaged portrait. */
function photo(rng: Rng): Uint8Array {
  switch (rng.int(0, 8)) {
    case 0: // image data far past 64×64's 12 KiB
      return pngOf(
        pngIhdr(64),
        pngChunk("IDAT", zeros(rng.pick([16, 64, 256]))),
      );
    case 1: { // an ICC profile bomb before real pixels
      const rows = deflateSync(new Uint8Array(32 * (1 + 32 * 3)));
      const profile = concat([enc.encode("icc\0\0"), zeros(64)]);
      return pngOf(
        pngIhdr(32),
        pngChunk("iCCP", profile),
        pngChunk("IDAT", rows),
      );
    }
    case 2: // thousands of scans over a 4096×4096 frame
      return progressiveJpeg(4096, rng.int(101, 5_000));
    case 3: // a valid grey progressive JPEG (no face)
      return progressiveJpeg(rng.pick([64, 256]), rng.int(0, 99));
    case 4: // a second IHDR claiming more pixels
      return pngOf(
        pngIhdr(8),
        pngIhdr(rng.pick([4096, 65535, 0x7fffffff])),
        pngChunk("IDAT", zeros(1)),
      );
    case 5: { // a real portrait with bytes flipped
      const b = rng.pick(PORTRAITS).slice();
      for (let i = rng.int(1, 40); i > 0; i--) {
        b[rng.int(0, b.length - 1)] = rng.int(0, 255);
      }
      return b;
    }
    case 6: { // a real portrait cut short
      const b = rng.pick(PORTRAITS);
      return b.subarray(0, rng.int(0, b.length - 1));
    }
    case 7:
      return rng.bytes(rng.int(0, 4096));
    default: // a header claiming the largest sides, garbage after it
      return pngOf(pngIhdr(4096), pngChunk("IDAT", rng.bytes(200)));
  }
}

/** One upload case for `c`. */
export function uploadCase(rng: Rng, c: ConsoleTarget): RestCase {
  const boundary = `fuzz${rng.int(0, 1e9)}`;
  const field = (name: string, value: string) =>
    `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = field("_csrf", c.csrf) + field("tenant_id", c.tenant) +
    field("name", "Fuzz") + field("consent", "yes");
  let body: Uint8Array;
  if (rng.bool(0.15)) {
    // Tens of thousands of tiny parts, within the 8-MiB limit.
    const part = field("x", "");
    body = enc.encode(
      head + part.repeat(rng.int(10_000, 120_000)) + `--${boundary}--\r\n`,
    );
  } else {
    body = concat([
      enc.encode(
        head +
          `--${boundary}\r\ncontent-disposition: form-data; name="photo"; filename="p"\r\n` +
          `content-type: application/octet-stream\r\n\r\n`,
      ),
      photo(rng),
      enc.encode(`\r\n--${boundary}--\r\n`),
    ]);
  }
  return {
    kind: "upload",
    method: "POST",
    target: "/admin/avatars",
    headers: [
      ["cookie", c.cookie],
      ["origin", c.origin],
      ["content-type", `multipart/form-data; boundary=${boundary}`],
    ],
    body,
    secrets: [],
  };
}
