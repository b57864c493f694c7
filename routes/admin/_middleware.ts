/**
 * The console's guard, around every /admin route: strict security headers, HTML error
 * pages, the Origin check and form parsing for state-changing requests, the console
 * session (re-checked on every request) and the CSRF token of every signed-in form.
 */
import {
  clearSessionCookie,
  FormRefused,
  originAllowed,
  readCookie,
  readForm,
  readUploadForm,
  redirect,
  securityHeaders,
  SESSION_COOKIE,
  tokensEqual,
} from "../../lib/console/http.ts";
import { consoleState, errorPage } from "../../lib/console/render.tsx";
import { loadConsoleSession } from "../../lib/console/session.ts";
import { takeUploadSlot } from "../../lib/console/upload_slots.ts";
import { toApiError } from "../../lib/errors.ts";
import type { Ctx } from "../../lib/api/http.ts";
import { MAX_PHOTO_BYTES } from "../../lib/photo/mod.ts";

/** Paths reachable without a console session. */
const PUBLIC_PATHS = new Set(["/admin/login"]);
/** Pages allowed to use the microphone (Permissions-Policy); every other denies it. */
const MICROPHONE_PATHS = new Set(["/admin/try"]);
/** Forms that may carry a photo (multipart): the photo's limit plus the form's own. */
const UPLOAD_PATHS = new Set(["/admin/avatars"]);
const UPLOAD_MAX_BYTES = MAX_PHOTO_BYTES + 64 * 1024;
/** An 8-MiB photo over a slow uplink needs longer than a form's 10 s. */
const UPLOAD_TIMEOUT_MS = 120_000;
/** The live stream answers 401 instead of redirecting (EventSource then stops). */
const STREAM_PATH = "/admin/sessions/events";

export async function handler(ctx: Ctx): Promise<Response> {
  let res: Response;
  try {
    res = await guard(ctx);
  } catch (err) {
    res = renderFailure(ctx, err);
  }
  return withSecurityHeaders(res, MICROPHONE_PATHS.has(ctx.url.pathname));
}

async function guard(ctx: Ctx): Promise<Response> {
  const state = consoleState(ctx);
  const method = ctx.req.method;
  const unsafe = method !== "GET" && method !== "HEAD";
  if (unsafe && !originAllowed(ctx)) {
    return errorPage(
      ctx,
      403,
      "Request refused",
      "This form was not sent from this console's own pages (the Origin header is missing or belongs to another site). Go back, reload the page and try again.",
    );
  }

  const sid = readCookie(ctx.req, SESSION_COOKIE);
  if (sid) state.session = await loadConsoleSession(ctx.deps, sid) ?? undefined;
  if (unsafe) {
    try {
      // Only a signed-in upload page may send a photo; any other form stays at 64 KiB.
      if (state.session && UPLOAD_PATHS.has(ctx.url.pathname)) {
        // Before a byte is read: a body is held whole while it arrives (upload_slots.ts).
        const release = takeUploadSlot(
          ctx.deps,
          state.session.record.tenant_id,
        );
        if (!release) {
          await ctx.req.body?.cancel();
          return errorPage(
            ctx,
            503,
            "Busy with other uploads",
            "Another photo is being uploaded. Wait a few seconds, then send the form again.",
            { "retry-after": "5" },
          );
        }
        try {
          const upload = await readUploadForm(
            ctx.req,
            UPLOAD_MAX_BYTES,
            UPLOAD_TIMEOUT_MS,
          );
          state.form = upload.form;
          state.files = upload.files;
        } finally {
          release();
        }
      } else {
        state.form = await readForm(
          ctx.req,
          ctx.deps.config.requestBodyTimeoutMs,
        );
      }
    } catch (err) {
      if (err instanceof FormRefused) {
        return errorPage(ctx, err.status, err.title, err.message);
      }
      throw err;
    }
  }
  if (PUBLIC_PATHS.has(ctx.url.pathname)) return await ctx.next();

  if (!state.session) {
    const clear = sid ? { "set-cookie": clearSessionCookie(ctx) } : undefined;
    if (ctx.url.pathname === STREAM_PATH) {
      return new Response("Signed out\n", {
        status: 401,
        headers: { "content-type": "text/plain; charset=utf-8", ...clear },
      });
    }
    const next = unsafe ? "" : ctx.url.pathname + ctx.url.search;
    const to = next && next !== "/admin"
      ? `/admin/login?next=${encodeURIComponent(next)}`
      : "/admin/login";
    return redirect(to, clear);
  }

  if (
    unsafe &&
    !tokensEqual(state.form.get("_csrf") ?? "", state.session.record.csrf)
  ) {
    return errorPage(
      ctx,
      403,
      "Request refused",
      "The form's security token is missing or out of date. Go back, reload the page and try again.",
    );
  }
  return await ctx.next();
}

function renderFailure(ctx: Ctx, err: unknown): Response {
  const e = toApiError(err);
  if (e.code === "AVTR_NOT_FOUND") {
    return errorPage(
      ctx,
      404,
      "Page not found",
      "There is no console page at this address.",
    );
  }
  if (e.code === "AVTR_METHOD_NOT_ALLOWED") {
    return errorPage(ctx, 405, "Method not allowed", e.message, e.headers);
  }
  if (e.code === "AVTR_INTERNAL_ERROR" || e.status >= 500) {
    ctx.deps.log.error("console request failed", {
      request_id: ctx.state.requestId,
      code: e.code,
      err: e.cause instanceof Error
        ? { name: e.cause.name, message: e.cause.message, stack: e.cause.stack }
        : String(e.cause ?? err),
    });
  }
  if (e.code === "AVTR_SESSION_STATE_UNAVAILABLE") {
    return errorPage(
      ctx,
      503,
      "Store unavailable",
      "The session store is not answering right now. Try again in a few seconds.",
      { "retry-after": String(e.retryAfter ?? 5) },
    );
  }
  if (e.code === "AVTR_INTERNAL_ERROR") {
    return errorPage(
      ctx,
      500,
      "Something went wrong",
      `The console could not complete this request. Request id: ${ctx.state.requestId}`,
    );
  }
  return errorPage(ctx, e.status, "Request failed", e.message);
}

function withSecurityHeaders(res: Response, microphone: boolean): Response {
  const extra = securityHeaders({ microphone });
  // A route that chose its caching (the avatar preview's revalidated ETag) keeps it.
  if (res.headers.has("cache-control")) extra.delete("cache-control");
  try {
    for (const [k, v] of extra) res.headers.set(k, v);
    return res;
  } catch {
    const headers = new Headers(res.headers);
    for (const [k, v] of extra) headers.set(k, v);
    return new Response(res.body, { status: res.status, headers });
  }
}
