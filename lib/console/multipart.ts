/**
 * `multipart/form-data` (RFC 7578 over RFC 2046) read here, not by `Request.formData()`:
 * one parser decides both what the form holds and when it is too much, so no guard can
 * disagree with the parse (issue 29: a boundary spelled so that a counting guard found
 * no parts let `formData()` build 153,711 of them). The Content-Type is parsed strictly
 * (RFC 9110 parameters, RFC 2046 boundary) and the body is parsed as it arrives, with
 * hard limits on parts, part headers and text: a form past one is refused at the byte
 * that crosses it, and the rest of the body is never read.
 */

/** A form the parser refuses; the message is the sentence to show. */
export class MultipartRefused extends Error {}

/** What one form may hold. */
export interface MultipartLimits {
  /** Parts (fields and files) in all. */
  maxParts: number;
  /** Bytes of one part's header block. */
  maxHeaderBytes: number;
  /** Bytes of every text field's value together (files do not count). */
  maxFieldBytes: number;
}

/** The parsed form: text fields in order, and files. */
export interface MultipartForm {
  fields: [string, string][];
  files: [string, File][];
}

const TOKEN = /[!#$%&'*+.^_`|~0-9A-Za-z-]+/y;
const MEDIA_TYPE = /[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+/y;
// qdtext and quoted-pair of RFC 9110 5.6.4 (obs-text included).
const QUOTED =
  /"((?:[\t \x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t \x21-\x7e\x80-\xff])*)"/y;
const OWS = /[ \t]*/y;
/** RFC 2046 5.1.1: 1–70 bchars, the last not a space. */
const BOUNDARY = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;
/** The longest boundary RFC 2046 allows. */
export const MAX_BOUNDARY_CHARS = 70;

function sticky(re: RegExp, s: string, at: number): RegExpExecArray | null {
  re.lastIndex = at;
  return re.exec(s);
}

/**
 * The boundary of a `multipart/form-data` Content-Type, parsed strictly: RFC 9110
 * parameters (a quoted-string's escapes undone exactly), the boundary named once, 1–70
 * characters of RFC 2046's set. Throws `MultipartRefused` naming what is wrong.
 */
export function multipartBoundary(contentType: string): string {
  const unreadable = () =>
    new MultipartRefused("The form's Content-Type header could not be read");
  const type = sticky(MEDIA_TYPE, contentType, 0);
  if (!type || type[0].toLowerCase() !== "multipart/form-data") {
    throw unreadable();
  }
  let at = type[0].length;
  let boundary: string | null = null;
  while (at < contentType.length) {
    at += sticky(OWS, contentType, at)![0].length;
    if (at === contentType.length) break;
    if (contentType[at] !== ";") throw unreadable();
    at++;
    at += sticky(OWS, contentType, at)![0].length;
    // RFC 9110 allows an empty parameter (";;").
    if (at === contentType.length || contentType[at] === ";") continue;
    const name = sticky(TOKEN, contentType, at);
    if (!name || contentType[at + name[0].length] !== "=") throw unreadable();
    at += name[0].length + 1;
    let value: string;
    const quoted = sticky(QUOTED, contentType, at);
    if (quoted) {
      value = quoted[1].replace(/\\(.)/gs, "$1");
      at += quoted[0].length;
    } else {
      const token = sticky(TOKEN, contentType, at);
      if (!token) throw unreadable();
      value = token[0];
      at += token[0].length;
    }
    if (name[0].toLowerCase() !== "boundary") continue;
    if (boundary !== null) {
      throw new MultipartRefused(
        "The form's Content-Type names two boundaries",
      );
    }
    boundary = value;
  }
  if (boundary === null) {
    throw new MultipartRefused("The form's Content-Type names no boundary");
  }
  if (boundary.length > MAX_BOUNDARY_CHARS) {
    throw new MultipartRefused(
      `The form's boundary is longer than ${MAX_BOUNDARY_CHARS} characters (RFC 2046)`,
    );
  }
  if (!BOUNDARY.test(boundary)) {
    throw new MultipartRefused(
      "The form's boundary has a character RFC 2046 does not allow",
    );
  }
  return boundary;
}

const CR = 13;
const LF = 10;
const CRLF_CRLF = needle(new Uint8Array([CR, LF, CR, LF]));
/** Spaces and tabs after a boundary (RFC 2046 transport padding) read before refusing. */
const MAX_PADDING = 256;

/** A byte string to search for, with its Knuth–Morris–Pratt failure table. */
interface Needle {
  bytes: Uint8Array;
  fail: Int32Array;
}

function needle(bytes: Uint8Array): Needle {
  const fail = new Int32Array(bytes.length);
  for (let i = 1, k = 0; i < bytes.length; i++) {
    while (k > 0 && bytes[i] !== bytes[k]) k = fail[k - 1];
    if (bytes[i] === bytes[k]) k++;
    fail[i] = k;
  }
  return { bytes, fail };
}

/**
 * The first `n` in `hay[from, to)`, or -1. Knuth–Morris–Pratt: each byte is looked at
 * a bounded number of times whatever the boundary, which the sender chooses (a naive
 * or Horspool search over a boundary of dashes and a body of dashes is quadratic).
 */
function find(
  hay: Uint8Array,
  n: Needle,
  from: number,
  to = hay.length,
): number {
  const { bytes, fail } = n;
  const end = Math.min(to, hay.length);
  for (let i = from, k = 0; i < end; i++) {
    const b = hay[i];
    while (k > 0 && b !== bytes[k]) k = fail[k - 1];
    if (b === bytes[k] && ++k === bytes.length) return i - k + 1;
  }
  return -1;
}

interface Part {
  name: string;
  filename: string | null;
  type: string;
  chunks: Uint8Array[];
}

type State = "preamble" | "delimiter" | "headers" | "body" | "epilogue";

/**
 * A streaming `multipart/form-data` parser: `push` each chunk as it arrives, `end` when
 * the body ends. Throws `MultipartRefused` from the call that crosses a limit or finds
 * the form malformed; nothing past that point is looked at.
 */
export class MultipartParser {
  readonly #delimiter: Needle;
  readonly #limits: MultipartLimits;
  // A CRLF before the body, so a first boundary at its very start is a delimiter too.
  #buf: Uint8Array = new Uint8Array([CR, LF]);
  #state: State = "preamble";
  #part: Part | null = null;
  #parts = 0;
  #fieldBytes = 0;
  readonly #form: MultipartForm = { fields: [], files: [] };

  constructor(boundary: string, limits: MultipartLimits) {
    this.#delimiter = needle(new TextEncoder().encode(`\r\n--${boundary}`));
    this.#limits = limits;
  }

  /** Parses the next chunk of the body. */
  push(chunk: Uint8Array): void {
    if (this.#state === "epilogue") return;
    const buf = new Uint8Array(this.#buf.length + chunk.length);
    buf.set(this.#buf);
    buf.set(chunk, this.#buf.length);
    this.#buf = buf.subarray(this.#advance(buf));
  }

  /** The form, once the body has ended. */
  end(): MultipartForm {
    if (this.#state !== "epilogue") {
      throw new MultipartRefused("The form ended before its closing boundary");
    }
    return this.#form;
  }

  /** Parses what `buf` holds; returns where the unparsed rest starts. */
  #advance(buf: Uint8Array): number {
    const d = this.#delimiter.bytes;
    let at = 0;
    while (true) {
      switch (this.#state) {
        case "preamble": {
          const i = find(buf, this.#delimiter, at);
          if (i < 0) return Math.max(at, buf.length - d.length + 1);
          at = i + d.length;
          this.#state = "delimiter";
          break;
        }
        case "delimiter": {
          if (buf.length - at < 2) return at;
          if (buf[at] === 0x2d && buf[at + 1] === 0x2d) {
            this.#state = "epilogue";
            return buf.length;
          }
          let j = at;
          while (j < buf.length && (buf[j] === 0x20 || buf[j] === 0x09)) j++;
          if (j - at > MAX_PADDING) throw this.#malformed();
          if (buf.length - j < 2) return at;
          if (buf[j] !== CR || buf[j + 1] !== LF) throw this.#malformed();
          if (++this.#parts > this.#limits.maxParts) {
            throw new MultipartRefused(
              `The form has more than ${this.#limits.maxParts} fields`,
            );
          }
          // The delimiter line's CRLF starts the header search, so an empty header
          // block (CRLF CRLF right away) is found too.
          at = j;
          this.#state = "headers";
          break;
        }
        case "headers": {
          // Only as far as the limit allows: past it the form is refused anyway.
          const i = find(
            buf,
            CRLF_CRLF,
            at,
            at + this.#limits.maxHeaderBytes + 6,
          );
          const size = (i < 0 ? buf.length : i) - at - 2;
          if (size > this.#limits.maxHeaderBytes) {
            throw new MultipartRefused(
              `A form field's headers are longer than ${this.#limits.maxHeaderBytes} bytes`,
            );
          }
          if (i < 0) return at;
          this.#part = partOf(buf.subarray(at + 2, Math.max(at + 2, i)));
          at = i + 4;
          this.#state = "body";
          break;
        }
        case "body": {
          const i = find(buf, this.#delimiter, at);
          const stop = i < 0 ? Math.max(at, buf.length - d.length + 1) : i;
          this.#take(buf.subarray(at, stop));
          if (i < 0) return stop;
          this.#finishPart();
          at = i + d.length;
          this.#state = "delimiter";
          break;
        }
        case "epilogue":
          return buf.length;
      }
    }
  }

  #take(bytes: Uint8Array): void {
    const part = this.#part!;
    if (bytes.length === 0) return;
    if (part.filename === null) {
      this.#fieldBytes += bytes.length;
      if (this.#fieldBytes > this.#limits.maxFieldBytes) {
        throw new MultipartRefused(
          `The form's text fields are larger than ${this.#limits.maxFieldBytes} bytes`,
        );
      }
    }
    part.chunks.push(bytes);
  }

  #finishPart(): void {
    const p = this.#part!;
    this.#part = null;
    if (p.filename === null) {
      const bytes = new Uint8Array(p.chunks.reduce((n, c) => n + c.length, 0));
      let off = 0;
      for (const c of p.chunks) {
        bytes.set(c, off);
        off += c.length;
      }
      this.#form.fields.push([p.name, new TextDecoder().decode(bytes)]);
    } else {
      this.#form.files.push([
        p.name,
        new File(p.chunks as Uint8Array<ArrayBuffer>[], p.filename, {
          type: p.type,
        }),
      ]);
    }
  }

  #malformed(): MultipartRefused {
    return new MultipartRefused(
      "The form could not be read: a boundary line is malformed",
    );
  }
}

/**
 * A part from its header block: `Content-Disposition: form-data; name=…` required,
 * `filename` making it a file, `Content-Type` its type; other headers are ignored.
 */
function partOf(block: Uint8Array): Part {
  const part: Part = { name: "", filename: null, type: "", chunks: [] };
  let disposition: string | null = null;
  const text = new TextDecoder().decode(block);
  for (const line of text === "" ? [] : text.split("\r\n")) {
    const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/s.exec(line);
    if (!m) {
      throw new MultipartRefused(
        "The form could not be read: a field has a malformed header line",
      );
    }
    const name = m[1].toLowerCase();
    if (name === "content-disposition") {
      if (disposition !== null) {
        throw new MultipartRefused(
          "The form could not be read: a field has two Content-Disposition headers",
        );
      }
      disposition = m[2];
    } else if (name === "content-type") part.type = m[2];
  }
  const params = disposition === null ? null : dispositionParams(disposition);
  const name = params?.get("name");
  if (name === undefined) throw noName();
  part.name = name;
  part.filename = params!.get("filename") ?? null;
  return part;
}

function noName(): MultipartRefused {
  return new MultipartRefused(
    "The form could not be read: a field has no form-data Content-Disposition with a name",
  );
}

/**
 * The parameters of `form-data; name="…"; filename="…"`, or null when it is not that.
 * Browsers percent-encode `"`, CR and LF in these values and leave `\` as it is (the
 * HTML standard's form-data encoding), so a quoted value runs to the next `"` with no
 * escapes: read as they are written.
 */
function dispositionParams(value: string): Map<string, string> | null {
  const m = /^form-data[ \t]*/iy.exec(value);
  if (!m) return null;
  const params = new Map<string, string>();
  let at = m[0].length;
  while (at < value.length) {
    const p = sticky(
      /;[ \t]*([!#$%&'*+.^_`|~0-9A-Za-z-]+)=(?:"([^"]*)"|([!#$%&'*+.^_`|~0-9A-Za-z-]+))[ \t]*/y,
      value,
      at,
    );
    if (!p) return null;
    const key = p[1].toLowerCase();
    if (params.has(key)) return null;
    params.set(key, p[2] ?? p[3]);
    at += p[0].length;
  }
  return params;
}
