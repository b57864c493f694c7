/**
 * The console's own multipart/form-data reading (issue 29): the strict Content-Type
 * boundary, the streaming parser and its limits, and `readUploadForm` refusing a form
 * at the part that crosses a limit without reading (or parsing) the rest of the body.
 */
import assert from "node:assert/strict";
import {
  multipartBoundary,
  MultipartParser,
  MultipartRefused,
} from "../../../lib/console/multipart.ts";
import {
  FormRefused,
  MAX_UPLOAD_PARTS,
  readUploadForm,
} from "../../../lib/console/http.ts";

const enc = new TextEncoder();
const LIMITS = { maxParts: 32, maxHeaderBytes: 8192, maxFieldBytes: 65536 };

Deno.test("multipartBoundary() reads RFC 2046 boundaries exactly and refuses every other", async (t) => {
  await t.step("accepted", () => {
    for (
      const [header, boundary] of [
        [
          "multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW",
          "----WebKitFormBoundary7MA4YWxkTrZu0gW",
        ],
        [
          "multipart/form-data; boundary=----geckoformboundary5d3c9e8f1a2b",
          "----geckoformboundary5d3c9e8f1a2b",
        ],
        ['Multipart/Form-Data;BOUNDARY="a b"', "a b"],
        ['multipart/form-data; charset=utf-8; boundary="\\a\\b"', "ab"],
        ["multipart/form-data; ; boundary=x ;", "x"],
        [`multipart/form-data; boundary=${"b".repeat(70)}`, "b".repeat(70)],
        [`multipart/form-data; boundary="'()+_,-./:=? z"`, "'()+_,-./:=? z"],
      ]
    ) {
      assert.equal(multipartBoundary(header), boundary, header);
    }
  });
  await t.step("refused, each with its cause", () => {
    for (
      const [header, cause] of [
        ['multipart/form-data; boundary="a\\"b"', /character RFC 2046/],
        ['multipart/form-data; boundary="a\\\\b"', /character RFC 2046/],
        [`multipart/form-data; boundary=${"b".repeat(71)}`, /longer than 70/],
        [
          `multipart/form-data; boundary="${"b".repeat(200)}"`,
          /longer than 70/,
        ],
        ['multipart/form-data; boundary="a "', /character RFC 2046/],
        ['multipart/form-data; boundary=""', /character RFC 2046/],
        ["multipart/form-data; boundary=a; boundary=b", /two boundaries/],
        ["multipart/form-data", /no boundary/],
        ['multipart/form-data; boundary="abc', /could not be read/],
        ["multipart/form-data; boundary=a\u00e9", /could not be read/],
        ["multipart/form-data boundary=abc", /could not be read/],
        ["text/plain; boundary=abc", /could not be read/],
      ] as const
    ) {
      assert.throws(
        () => multipartBoundary(header),
        (e) => e instanceof MultipartRefused && cause.test(e.message),
        header,
      );
    }
  });
});

/** The body and Content-Type of `form` as Deno serialises it (as a browser does). */
async function serialised(
  form: FormData,
): Promise<[Uint8Array<ArrayBuffer>, string]> {
  const req = new Request("http://localhost/", { method: "POST", body: form });
  return [await req.bytes(), req.headers.get("content-type")!];
}

function parse(
  body: Uint8Array,
  boundary: string,
  chunk = body.length,
  limits = LIMITS,
) {
  const p = new MultipartParser(boundary, limits);
  for (let i = 0; i < body.length; i += chunk) {
    p.push(body.subarray(i, i + chunk));
  }
  return p.end();
}

Deno.test("MultipartParser reads a browser-made form as formData() does, however the body is cut into chunks", async () => {
  const photo = new Uint8Array(70_000).map((_, i) => (i * 7919) % 251);
  // A boundary inside the file's bytes but not at a line start is data.
  photo.set(enc.encode("--x\r\n--y"), 1000);
  const form = new FormData();
  form.set("_csrf", "tok");
  form.set("name", 'Zoë "Z" \\ Smith\r\nline two');
  form.set(
    "photo",
    new File([photo], 'me \\ "q".jpg', { type: "image/jpeg" }),
  );
  form.set("consent", "yes");
  const [body, type] = await serialised(form);
  const expected = await new Response(body, {
    headers: { "content-type": type },
  }).formData();
  const boundary = multipartBoundary(type);
  for (const chunk of [body.length, 65536, 1000, 7, 1]) {
    const got = parse(body, boundary, chunk);
    assert.deepEqual(
      got.fields,
      [...expected].filter(([, v]) => typeof v === "string"),
      `chunk ${chunk}`,
    );
    assert.equal(got.files.length, 1);
    const [name, file] = got.files[0];
    const want = expected.get("photo") as File;
    assert.equal(name, "photo");
    assert.equal(file.name, want.name);
    assert.equal(file.type, "image/jpeg");
    assert.deepEqual(await file.bytes(), photo);
  }
});

Deno.test("MultipartParser reads a form as Chrome writes it, a first boundary at the very start and an empty file field", () => {
  const b = "----WebKitFormBoundaryABCDEFGHijklmnop";
  const body = enc.encode(
    `--${b}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\nt\r\n` +
      `--${b}\r\nContent-Disposition: form-data; name="photo"; filename=""\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n\r\n` +
      `--${b}\r\nContent-Disposition: form-data; name="consent"\r\n\r\nyes\r\n` +
      `--${b}--\r\n`,
  );
  const got = parse(body, b);
  assert.deepEqual(got.fields, [["_csrf", "t"], ["consent", "yes"]]);
  assert.equal(got.files[0][0], "photo");
  assert.equal(got.files[0][1].size, 0);
});

Deno.test("MultipartParser refuses a form past a limit or malformed, naming the cause", async (t) => {
  const b = "bnd";
  const field = (name: string, value: string, extra = "") =>
    `--${b}\r\ncontent-disposition: form-data; name="${name}"${extra}\r\n\r\n${value}\r\n`;
  const cases: [string, string, RegExp, typeof LIMITS?][] = [
    [
      "33 parts",
      field("x", "").repeat(33) + `--${b}--\r\n`,
      /more than 32 fields/,
    ],
    [
      "a header block past the limit",
      `--${b}\r\ncontent-disposition: form-data; name="x"\r\nx-pad: ${
        "p".repeat(9000)
      }\r\n\r\nv\r\n--${b}--\r\n`,
      /headers are longer than 8192 bytes/,
    ],
    [
      "text fields past the limit",
      field("a", "v".repeat(40_000)) + field("b", "v".repeat(40_000)) +
      `--${b}--\r\n`,
      /text fields are larger than 65536 bytes/,
    ],
    ["no closing boundary", field("a", "v"), /ended before its closing/],
    ["no boundary at all", "hello", /ended before its closing/],
    [
      "a boundary followed by junk",
      `--${b}junk\r\n` + field("a", "v") + `--${b}--`,
      /boundary line is malformed/,
    ],
    [
      "a part without a name",
      `--${b}\r\ncontent-disposition: form-data\r\n\r\nv\r\n--${b}--`,
      /no form-data Content-Disposition/,
    ],
    [
      "a part without Content-Disposition",
      `--${b}\r\ncontent-type: text/plain\r\n\r\nv\r\n--${b}--`,
      /no form-data Content-Disposition/,
    ],
    [
      "a folded header line",
      `--${b}\r\ncontent-disposition: form-data;\r\n name="a"\r\n\r\nv\r\n--${b}--`,
      /malformed header line/,
    ],
  ];
  for (const [what, text, cause] of cases) {
    await t.step(what, () => {
      for (const chunk of [text.length, 5]) {
        assert.throws(
          () => parse(enc.encode(text), b, chunk),
          (e) => e instanceof MultipartRefused && cause.test(e.message),
        );
      }
    });
  }
});

/**
 * A request whose body is `parts` empty fields in 64-KiB chunks, counting the chunks
 * the server pulls and whether it cancelled the rest.
 */
function manyParts(contentType: string, delimiter: string, parts: number) {
  const one = enc.encode(
    `--${delimiter}\r\ncontent-disposition: form-data; name="x"\r\n\r\n\r\n`,
  );
  const body = new Uint8Array(one.length * parts);
  for (let i = 0; i < parts; i++) body.set(one, i * one.length);
  const seen = { pulled: 0, cancelled: false, chunks: 0 };
  seen.chunks = Math.ceil(body.length / 65536);
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      const at = seen.pulled++ * 65536;
      if (at >= body.length) c.close();
      else c.enqueue(body.slice(at, at + 65536));
    },
    cancel() {
      seen.cancelled = true;
    },
  }, { highWaterMark: 0 });
  const req = new Request("http://localhost/admin/avatars", {
    method: "POST",
    headers: { "content-type": contentType },
    body: stream,
  });
  return { req, seen };
}

Deno.test("readUploadForm() refuses a form of many parts at the part past MAX_UPLOAD_PARTS, the rest of the body unread", async () => {
  const { req, seen } = manyParts(
    "multipart/form-data; boundary=many",
    "many",
    150_000,
  );
  await assert.rejects(
    () => readUploadForm(req, 9 << 20, 10_000),
    (e) =>
      e instanceof FormRefused && e.status === 400 &&
      e.message === `The form has more than ${MAX_UPLOAD_PARTS} fields.`,
  );
  assert.ok(seen.chunks > 100, `${seen.chunks} chunks in the body`);
  assert.equal(seen.pulled, 1, "only the first chunk was read");
  assert.ok(seen.cancelled, "the rest of the body was cancelled");
});

Deno.test("readUploadForm() refuses a boundary formData() would read differently before a byte of the body is read", async (t) => {
  for (
    const [what, type, delimiter, cause] of [
      [
        "a quoted boundary with an escaped quote",
        'multipart/form-data; boundary="a\\"b"',
        'a"b',
        "The form's boundary has a character RFC 2046 does not allow.",
      ],
      [
        "a boundary of 71 characters",
        `multipart/form-data; boundary=${"b".repeat(71)}`,
        "b".repeat(71),
        "The form's boundary is longer than 70 characters (RFC 2046).",
      ],
      [
        "a quoted boundary of 100 characters",
        `multipart/form-data; boundary="${"c".repeat(100)}"`,
        "c".repeat(100),
        "The form's boundary is longer than 70 characters (RFC 2046).",
      ],
    ]
  ) {
    await t.step(what, async () => {
      const { req, seen } = manyParts(type, delimiter, 150_000);
      await assert.rejects(
        () => readUploadForm(req, 9 << 20, 10_000),
        (e) =>
          e instanceof FormRefused && e.status === 400 && e.message === cause,
      );
      assert.equal(seen.pulled, 0, "no byte of the body was read");
      assert.ok(seen.cancelled, "the body was cancelled");
    });
  }
});
