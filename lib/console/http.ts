/**
 * HTTP details of the admin console: cookies, form bodies, same-origin checks, redirects
 * and the security headers every `/admin` response carries.
 */
import { timingSafeEqual } from "node:crypto";
import { BODY_TIMEOUT_MS, readBodyBytes, readBodyChunks } from "../api/body.ts";
import { ApiError } from "../errors.ts";
import type { Ctx } from "../api/http.ts";
import {
  multipartBoundary,
  type MultipartForm,
  MultipartParser,
  MultipartRefused,
} from "./multipart.ts";

/** The console session cookie (Path=/admin). */
export const SESSION_COOKIE = "avtr_console";
/** The sign-in form's double-submit CSRF cookie (Path=/admin/login). */
export const LOGIN_CSRF_COOKIE = "avtr_console_login";
/** The largest form body the console reads. */
export const MAX_FORM_BYTES = 64 * 1024;

/**
 * Content-Security-Policy of every console response: scripts only from this origin (the
 * island bundle), no inline script or style, never framed. `media-src blob:` lets the
 * Try it page play the avatar through Media Source Extensions (a `blob:` URL of a
 * `MediaSource`); the media socket is same-origin (`connect-src 'self'`) and the
 * microphone worklet is a file under /static (`script-src 'self'`).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "media-src blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "manifest-src 'self'",
].join("; ");

/**
 * Security headers of every `/admin` response. `Referrer-Policy: same-origin` (not
 * `no-referrer`) because browsers send `Origin: null` on form posts under `no-referrer`,
 * which would defeat the Origin check. `microphone` allows this origin the microphone
 * (only the Try it page asks for it); every other page denies it.
 */
export function securityHeaders(
  options: { microphone?: boolean } = {},
): Headers {
  return new Headers({
    "content-security-policy": CONSOLE_CSP,
    "referrer-policy": "same-origin",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "permissions-policy": `camera=(), microphone=${
      options.microphone ? "(self)" : "()"
    }, geolocation=()`,
    "cache-control": "no-store",
  });
}

/** The value of cookie `name` in the request, or null. */
export function readCookie(req: Request, name: string): string | null {
  const header = req.headers.get("cookie");
  if (!header) return null;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    if (part.slice(0, i).trim() === name) {
      const value = part.slice(i + 1).trim();
      return /^[A-Za-z0-9_-]{1,200}$/.test(value) ? value : null;
    }
  }
  return null;
}

/** True when the console is reached over https (directly, or per `PUBLIC_URL`). */
export function isSecure(ctx: Ctx): boolean {
  return ctx.url.protocol === "https:" ||
    (ctx.deps.config.publicUrl ?? "").startsWith("https://");
}

export interface CookieOptions {
  path: string;
  maxAgeS: number;
  secure: boolean;
}

/** A `Set-Cookie` value: HttpOnly, SameSite=Strict, Secure over https. */
export function cookie(
  name: string,
  value: string,
  options: CookieOptions,
): string {
  const parts = [
    `${name}=${value}`,
    `Path=${options.path}`,
    `Max-Age=${Math.max(0, Math.floor(options.maxAgeS))}`,
    "HttpOnly",
    "SameSite=Strict",
  ];
  if (options.secure) parts.push("Secure");
  return parts.join("; ");
}

/** The `Set-Cookie` value that starts console session `id`. */
export function sessionCookie(ctx: Ctx, id: string, maxAgeMs: number): string {
  return cookie(SESSION_COOKIE, id, {
    path: "/admin",
    maxAgeS: maxAgeMs / 1000,
    secure: isSecure(ctx),
  });
}

/** The `Set-Cookie` value that removes the console session cookie. */
export function clearSessionCookie(ctx: Ctx): string {
  return cookie(SESSION_COOKIE, "", {
    path: "/admin",
    maxAgeS: 0,
    secure: isSecure(ctx),
  });
}

/** Origins a state-changing console request may come from. */
export function allowedOrigins(ctx: Ctx): string[] {
  const out = [ctx.url.origin];
  const pub = ctx.deps.config.publicUrl;
  if (pub) {
    try {
      out.push(new URL(pub).origin);
    } catch {
      // An unparsable PUBLIC_URL adds nothing.
    }
  }
  return out;
}

/** True when the request's `Origin` header names this console's origin. */
export function originAllowed(ctx: Ctx): boolean {
  const origin = ctx.req.headers.get("origin");
  return origin !== null && allowedOrigins(ctx).includes(origin);
}

/** Constant-time comparison of two tokens. */
export function tokensEqual(a: string, b: string): boolean {
  const ab = new TextEncoder().encode(a);
  const bb = new TextEncoder().encode(b);
  if (ab.length !== bb.length || ab.length === 0) return false;
  return timingSafeEqual(ab, bb);
}

/** A form body the console refuses: the page to answer with. */
export class FormRefused extends Error {
  constructor(
    readonly status: 400 | 408 | 413,
    readonly title: string,
    detail: string,
  ) {
    super(detail);
  }
}

/**
 * Reads an `application/x-www-form-urlencoded` body of at most 64 KiB within
 * `timeoutMs` for the whole of it (the REST bodies' bound, so a trickled sign-in cannot
 * hold a handler). Other content types read as an empty form (the CSRF check then
 * refuses the request). Throws `FormRefused`.
 */
export async function readForm(
  req: Request,
  timeoutMs = BODY_TIMEOUT_MS,
): Promise<URLSearchParams> {
  if (contentType(req) !== "application/x-www-form-urlencoded" || !req.body) {
    return new URLSearchParams();
  }
  const bytes = await readFormBytes(req, MAX_FORM_BYTES, timeoutMs);
  return new URLSearchParams(new TextDecoder().decode(bytes));
}

/** Fields (files included) an upload form may have; the console's have a handful. */
export const MAX_UPLOAD_PARTS = 32;
/** Bytes of one upload field's header block (a browser's are well under 1 KiB). */
export const MAX_UPLOAD_HEADER_BYTES = 8 * 1024;

/** A `multipart/form-data` upload: its text fields and its files. */
export interface UploadForm {
  form: URLSearchParams;
  files: Map<string, File>;
}

/**
 * Reads a `multipart/form-data` body of at most `maxBytes`, counted while it arrives
 * (a larger one is cut off unread), within `timeoutMs`; other bodies as `readForm`
 * does. The Content-Type's boundary is checked before a byte is read, and the body is
 * parsed as it arrives (./multipart.ts): more than `MAX_UPLOAD_PARTS` fields, a field's
 * headers past `MAX_UPLOAD_HEADER_BYTES` or text fields past 64 KiB refuse the form at
 * that point, unread beyond it. Throws `FormRefused`.
 */
export async function readUploadForm(
  req: Request,
  maxBytes: number,
  timeoutMs: number,
): Promise<UploadForm> {
  const form = new URLSearchParams();
  const files = new Map<string, File>();
  if (contentType(req) !== "multipart/form-data" || !req.body) {
    return { form, files };
  }
  let parsed: MultipartForm;
  try {
    const parser = new MultipartParser(
      multipartBoundary(req.headers.get("content-type") ?? ""),
      {
        maxParts: MAX_UPLOAD_PARTS,
        maxHeaderBytes: MAX_UPLOAD_HEADER_BYTES,
        maxFieldBytes: MAX_FORM_BYTES,
      },
    );
    await readFormChunks(req, maxBytes, timeoutMs, (c) => parser.push(c));
    parsed = parser.end();
  } catch (err) {
    if (!(err instanceof MultipartRefused)) throw err;
    await req.body.cancel().catch(() => {});
    throw new FormRefused(400, "Form unreadable", `${err.message}.`);
  }
  for (const [name, value] of parsed.fields) form.append(name, value);
  for (const [name, file] of parsed.files) {
    if (!files.has(name)) files.set(name, file);
  }
  return { form, files };
}

function contentType(req: Request): string {
  return (req.headers.get("content-type") ?? "").split(";")[0].trim()
    .toLowerCase();
}

async function readFormBytes(
  req: Request,
  max: number,
  timeoutMs: number,
): Promise<Uint8Array> {
  try {
    return await readBodyBytes(req, max, timeoutMs);
  } catch (err) {
    throw formRefusal(err, max);
  }
}

async function readFormChunks(
  req: Request,
  max: number,
  timeoutMs: number,
  sink: (chunk: Uint8Array) => void,
): Promise<void> {
  try {
    await readBodyChunks(req, max, timeoutMs, sink);
  } catch (err) {
    throw formRefusal(err, max);
  }
}

/** The `FormRefused` of a body-reading `ApiError`; any other error as it is. */
function formRefusal(err: unknown, max: number): unknown {
  if (!(err instanceof ApiError)) return err;
  if (err.code === "AVTR_REQUEST_TOO_LARGE") {
    return new FormRefused(
      413,
      "Form too large",
      `The form sent more than ${formatKiB(max)}.`,
    );
  }
  if (err.code === "AVTR_REQUEST_TIMEOUT") {
    return new FormRefused(
      408,
      "Form too slow",
      "The form did not arrive in time.",
    );
  }
  return new FormRefused(
    400,
    "Form unreadable",
    "The form could not be read.",
  );
}

function formatKiB(bytes: number): string {
  return bytes >= 1024 * 1024
    ? `${Math.round(bytes / (1024 * 1024))} MiB`
    : `${Math.round(bytes / 1024)} KiB`;
}

/** A 303 redirect to a console path. */
export function redirect(location: string, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("location", location);
  return new Response(null, { status: 303, headers: h });
}

/** A `next` target that is safe to redirect to: a console path, never another origin. */
export function safeNext(next: string | null): string {
  if (
    next && /^\/admin(\/[A-Za-z0-9_\-./:%?=&]*)?$/.test(next) &&
    !next.includes("//") && !next.includes("\\")
  ) {
    return next;
  }
  return "/admin/sessions";
}
