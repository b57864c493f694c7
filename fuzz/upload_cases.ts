/**
 * The REST fuzzer's cases for the console's photo upload (issue 22's second review):
 * multipart POSTs to `/admin/avatars` from a signed-in console, carrying what a hostile
 * tenant administrator would send: PNGs whose image data or ICC profile inflates far
 * past their pixels, progressive JPEGs of thousands of scans, a second IHDR, the real
 * portraits damaged or cut short, random bytes, forms of tens of thousands of parts,
 * issue 29's segments and headers that disagree with what the decoders read, and
 * multipart shapes a parser can disagree on: boundaries with escapes, past 70
 * characters, named twice, header blocks and text fields past their limits, forms cut
 * short (`multipartShapeCase`). Each must be answered (400, 403, 413; 201 for a
 * portrait that passes) without a 5xx, a hang or a stalled bystander.
 */
import { deflateSync } from "node:zlib";
import type { Rng } from "./_lib.ts";
import {
  concat,
  eatenMarkerJpeg,
  hiddenScansJpeg,
  pngChunk,
  pngIhdr,
  pngIhdrOf,
  pngOf,
  progressiveJpeg,
  withJpegSegment,
} from "./_images.ts";
import type { ConsoleTarget, RestCase } from "./rest_types.ts";

const enc = new TextEncoder();
const PORTRAITS = ["grace_hopper.jpg", "astronaut.png"].map((name) =>
  Deno.readFileSync(
    new URL(`../tests/fixtures/photo/${name}`, import.meta.url),
  )
);

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

/**
 * Issue 29's shapes: scans hidden from a walk that trusts segment lengths (a DQT of
 * length 3 whose table begins `FF D9`, a marker whose 0xFF a comment "ate"), segments
 * whose length disagrees with their fields, and PNG headers PNG does not allow (bit
 * depth 255 once sized a 2.14 GB inflate bound).
 */
export function inconsistentPhoto(rng: Rng): Uint8Array {
  const side = rng.pick([64, 4096]);
  switch (rng.int(0, 5)) {
    case 0:
      return hiddenScansJpeg(side, rng.int(101, 5_000));
    case 1:
      return eatenMarkerJpeg(side, rng.int(101, 5_000));
    case 2: { // a DQT, DHT, SOF, SOS or DRI declaring a length its fields do not take
      const marker = rng.pick([0xdb, 0xc4, 0xc0, 0xda, 0xdd]);
      const body = rng.bytes(rng.int(0, 140));
      if (marker === 0xdb && body.length > 2) body.set([0, 0xff, 0xd9]);
      return withJpegSegment(
        progressiveJpeg(side, rng.int(0, 300)),
        marker,
        rng.int(0, 200),
        [...body],
      );
    }
    case 3: // a bit depth or colour type PNG does not allow, data for the bound
      return pngOf(
        pngIhdrOf({
          width: side,
          height: side,
          depth: rng.pick([0, 3, 5, 12, 32, 255]),
          colour: rng.pick([0, 1, 2, 3, 4, 5, 6, 7, 255]),
        }),
        pngChunk("IDAT", zeros(rng.pick([1, 16, 64]))),
      );
    case 4: // compression, filter or interlace methods PNG does not define
      return pngOf(
        pngIhdrOf({
          width: side,
          height: side,
          compression: rng.int(0, 1),
          filter: rng.int(0, 1),
          interlace: rng.pick([1, 2, 255]),
        }),
        pngChunk("IDAT", zeros(1)),
      );
    default: // image data short of the header's pixels
      return pngOf(
        pngIhdr(64),
        pngChunk("IDAT", deflateSync(new Uint8Array(rng.int(0, 12_351)))),
      );
  }
}

/** A hostile or damaged portrait. */
function photo(rng: Rng): Uint8Array {
  switch (rng.int(0, 9)) {
    case 9:
      return inconsistentPhoto(rng);
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

/** A multipart shape the console must refuse as a form (400 or 413), and its name. */
export interface MultipartShape {
  what: string;
  contentType: string;
  body: Uint8Array;
}

/**
 * A hostile multipart form for `c` (the signed-in fields first, so only the form's
 * shape can refuse it): a boundary spelled so that two parsers read it differently, or a
 * body past one of the reader's limits or cut short.
 */
export function multipartShape(rng: Rng, c: ConsoleTarget): MultipartShape {
  const plain = `fz${rng.int(0, 1e9)}`;
  type Extra = (field: (n: string, v: string) => string) => string;
  const form = (boundary: string, extra: Extra, close = true) => {
    const field = (name: string, value: string) =>
      `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    return enc.encode(
      field("_csrf", c.csrf) + field("tenant_id", c.tenant) +
        field("name", "Fuzz") + field("consent", "yes") + extra(field) +
        (close ? `--${boundary}--\r\n` : ""),
    );
  };
  const many: Extra = (field) => field("x", "").repeat(rng.int(40, 120_000));
  const none: Extra = () => "";
  const shapes: (() => MultipartShape)[] = [
    () => ({ // formData() unescapes `a\"b`; a regex may stop at the backslash
      what: "escaped quote",
      contentType: 'multipart/form-data; boundary="a\\"b"',
      body: form('a"b', many),
    }),
    () => {
      const b = "b".repeat(rng.int(71, 300));
      return {
        what: "boundary past 70",
        contentType: `multipart/form-data; boundary=${
          rng.bool() ? b : `"${b}"`
        }`,
        body: form(b, many),
      };
    },
    () => ({
      what: "two boundaries",
      contentType: `multipart/form-data; boundary=${plain}; boundary=${plain}x`,
      body: form(`${plain}x`, many),
    }),
    () => ({
      what: "boundary of bad characters",
      contentType: `multipart/form-data; boundary="${
        rng.pick(["a\\\\b", "a b ", "a\u00e9b", "a;b", ""])
      }"`,
      body: form("a b", many),
    }),
    () => ({
      what: "unterminated quote",
      contentType: `multipart/form-data; boundary="${plain}`,
      body: form(plain, many),
    }),
    () => ({
      what: "many parts",
      contentType: `multipart/form-data; boundary="${plain}"`,
      body: form(plain, many),
    }),
    () => ({
      what: "header block bomb",
      contentType: `multipart/form-data; boundary=${plain}`,
      body: form(
        plain,
        () =>
          `--${plain}\r\ncontent-disposition: form-data; name="x"\r\nx-pad: ${
            "p".repeat(rng.int(9_000, 2_000_000))
          }\r\n\r\nv\r\n`,
      ),
    }),
    () => ({
      what: "text field flood",
      contentType: `multipart/form-data; boundary=${plain}`,
      body: form(plain, (f) => f("name", "n".repeat(rng.int(70_000, 4e6)))),
    }),
    () => ({
      what: "no closing boundary",
      contentType: `multipart/form-data; boundary=${plain}`,
      body: form(plain, rng.bool() ? none : many, false),
    }),
    () => ({
      what: "junk after a boundary",
      contentType: `multipart/form-data; boundary=${plain}`,
      body: form(plain, () => `--${plain}${"\t".repeat(300)}junk\r\n`),
    }),
    () => ({
      what: "LF-only lines",
      contentType: `multipart/form-data; boundary=${plain}`,
      body: enc.encode(
        `--${plain}\ncontent-disposition: form-data; name="_csrf"\n\n${c.csrf}\n--${plain}--\n`,
      ),
    }),
  ];
  return rng.pick(shapes)();
}

/** A multipart shape as a case. */
export function multipartShapeCase(rng: Rng, c: ConsoleTarget): RestCase {
  const shape = multipartShape(rng, c);
  return {
    kind: "upload",
    method: "POST",
    target: "/admin/avatars",
    headers: [
      ["cookie", c.cookie],
      ["origin", c.origin],
      ["content-type", shape.contentType],
    ],
    body: shape.body,
    secrets: [],
  };
}

/** One upload case for `c`. */
export function uploadCase(rng: Rng, c: ConsoleTarget): RestCase {
  if (rng.bool(0.3)) return multipartShapeCase(rng, c);
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
