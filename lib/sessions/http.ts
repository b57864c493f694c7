/**
 * The HTTP handlers of the session endpoints (SPEC 4.1–4.4), shared by the canonical
 * route modules and their deprecated aliases: authenticate (prefetching the session so
 * the read costs one KV round trip), call the domain function, shape the response.
 */
import { authenticate } from "../auth/authenticate.ts";
import { readJsonObject } from "../api/body.ts";
import { ApiError } from "../errors.ts";
import { type Ctx, type Handler, json } from "../api/http.ts";
import { parseIdempotencyKey } from "./idempotency.ts";
import { requireTokenSecret } from "../auth/tokens.ts";
import { createSession } from "./create.ts";
import { endSession } from "./end.ts";
import { sessionKey } from "./store.ts";
import {
  isSessionId,
  ownedSession,
  sessionNotFound,
  toClientTokenResponse,
  toStatusResponse,
} from "./views.ts";

/** Bodies carrying media tokens must not be cached anywhere. */
const NO_STORE = { "cache-control": "no-store" };

/** `POST /v1/sessions`. */
export async function handleCreate(ctx: Ctx): Promise<Response> {
  const { principal } = await authenticate(ctx, "sessions:write");
  const idempotencyKey = parseIdempotencyKey(
    ctx.req.headers.get("idempotency-key"),
  );
  const body = await readJsonObject(
    ctx.req,
    ctx.deps.config.requestBodyTimeoutMs,
  );
  const { response, replayed } = await createSession(ctx.deps, {
    tenantId: principal.tenantId,
    body,
    idempotencyKey,
  });
  return json(
    response,
    200,
    replayed ? { ...NO_STORE, "idempotent-replayed": "true" } : NO_STORE,
  );
}

/**
 * Authenticates for `scope` and reads the session of the path in the same round trip.
 * A `session_id` that breaks its pattern is a 404 like any absent session.
 */
async function authenticateForSession(
  ctx: Ctx,
  scope: "sessions:read" | "sessions:write",
): Promise<
  { tenantId: string; id: string; entry?: Deno.KvEntryMaybe<unknown> }
> {
  const id = ctx.params.session_id ?? "";
  const valid = isSessionId(id);
  const { principal, entries } = await authenticate(
    ctx,
    scope,
    valid ? [sessionKey(id)] : [],
  );
  return {
    tenantId: principal.tenantId,
    id,
    entry: valid ? entries[0] : undefined,
  };
}

/** `GET /v1/sessions/{session_id}`. */
export async function handleStatus(ctx: Ctx): Promise<Response> {
  const { tenantId, entry } = await authenticateForSession(
    ctx,
    "sessions:read",
  );
  if (!entry) throw sessionNotFound();
  return json(toStatusResponse(ownedSession(ctx.deps, tenantId, entry)));
}

/** The `force` query parameter: absent → false; "true"/"false"; else 400. */
export function parseForce(url: URL): boolean {
  const values = url.searchParams.getAll("force");
  if (values.length === 0) return false;
  if (values.length === 1 && (values[0] === "true" || values[0] === "false")) {
    return values[0] === "true";
  }
  throw new ApiError("AVTR_REQUEST_INVALID", "force must be true or false", {
    param: "force",
  });
}

/** `POST /v1/sessions/{session_id}/end`. */
export async function handleEnd(ctx: Ctx): Promise<Response> {
  const { tenantId, id, entry } = await authenticateForSession(
    ctx,
    "sessions:write",
  );
  const force = parseForce(ctx.url);
  if (!entry) throw sessionNotFound();
  return json(await endSession(ctx.deps, tenantId, id, { force, entry }));
}

/** `POST /v1/sessions/{session_id}/client-token`. */
export async function handleClientToken(ctx: Ctx): Promise<Response> {
  const { tenantId, entry } = await authenticateForSession(
    ctx,
    "sessions:write",
  );
  requireTokenSecret(ctx.deps);
  if (!entry) throw sessionNotFound();
  const rec = ownedSession(ctx.deps, tenantId, entry);
  return json(toClientTokenResponse(ctx.deps, rec), 200, NO_STORE);
}

/**
 * Wraps `handler` as a deprecated alias path (DECISIONS 4): same behaviour, plus
 * `Deprecation: true` and `Link: <successor>; rel="successor-version"` on every answer,
 * errors included. `successor` gets the session id segment as written in the request.
 */
export function deprecatedAlias(
  handler: Handler,
  successor: (idSegment: string) => string,
): Handler {
  return (ctx) => {
    const segment = ctx.url.pathname.split("/")[3] ?? "";
    ctx.state.headers.set("deprecation", "true");
    ctx.state.headers.set(
      "link",
      `<${successor(segment)}>; rel="successor-version"`,
    );
    return handler(ctx);
  };
}
