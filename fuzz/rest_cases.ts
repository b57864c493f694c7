/**
 * The REST fuzzer's case generators (fuzz/rest.ts runs them): garbage bodies for the
 * create and API-key bodies, hostile headers, and odd paths and methods over every
 * route. Each case is raw bytes on the wire, so nothing a client library would refuse
 * or normalise (duplicate headers, NUL bytes, invalid UTF-8, dot segments) is out of
 * reach. Deterministic: the same `Rng` state gives the same case. The bodies themselves:
 * ./rest_bodies.ts.
 */
import type { Rng } from "./_lib.ts";
import { apiKeyBody, createBody, mangledBody, secret } from "./rest_bodies.ts";
import type { CaseContext, RestCase } from "./rest_types.ts";

export type { CaseContext, RestCase };

const enc = new TextEncoder();

export const METHODS = [
  "GET",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "HEAD",
  "OPTIONS",
  "TRACE",
  "FOO",
  "get",
] as const;

/** Every route the manifest serves, `{sid}` and `{kid}` filled per case. */
export const ROUTES = [
  "/v1/sessions",
  "/v1/sessions/{sid}",
  "/v1/sessions/{sid}/end",
  "/v1/sessions/{sid}/client-token",
  "/v1/sessions/{sid}/status",
  "/v1/sessions/{sid}/ws-token",
  "/v1/sessions/{sid}/ws",
  "/v1/api-keys",
  "/v1/api-keys/{kid}",
  "/v1",
  "/healthz",
  "/readyz",
  "/openapi.json",
  "/docs",
  "/docs/errors/AVTR_NOT_FOUND",
  "/admin",
  "/admin/login",
  "/admin/sessions",
  "/admin/keys",
  "/static/islands.js",
] as const;

function authHeader(rng: Rng, ctx: CaseContext): [string, string][] {
  const r = rng.int(0, 9);
  if (r < 6) return [["authorization", `Bearer ${ctx.tenantKey}`]];
  if (r < 8) return [["authorization", `Bearer ${ctx.adminKey}`]];
  if (r < 9) return [["x-api-key", ctx.tenantKey]];
  return [];
}

/** A garbage body for a create or API-key route. */
export function bodyCase(rng: Rng, ctx: CaseContext): RestCase {
  const sec = secret(rng);
  const apiKeys = rng.bool(0.25);
  const base = apiKeys ? apiKeyBody(rng) : createBody(rng, sec);
  const body = mangledBody(rng, base);
  const headers: [string, string][] = apiKeys
    ? [["authorization", `Bearer ${ctx.adminKey}`]]
    : authHeader(rng, ctx);
  headers.push(["content-type", "application/json"]);
  if (rng.bool(0.2)) headers.push(["idempotency-key", `fz-${rng.int(0, 5)}`]);
  return {
    kind: "body",
    method: "POST",
    target: apiKeys ? "/v1/api-keys" : "/v1/sessions",
    headers,
    body,
    secrets: [sec],
  };
}

function fillRoute(rng: Rng, route: string, ctx: CaseContext): string {
  return route.replace(
    "{sid}",
    rng.pick([
      ctx.sessionId,
      encodeURIComponent(ctx.sessionId),
      "session:nope",
      rng.string(8).replace(/[^A-Za-z0-9]/g, "") || "x",
    ]),
  ).replace("{kid}", rng.pick(["01JZZZZZZZZZZZZZZZZZZZZZZZ", "nope", "%00"]));
}

/** Hostile headers on some route. */
export function headerCase(rng: Rng, ctx: CaseContext): RestCase {
  const sec = secret(rng);
  const route = fillRoute(rng, rng.pick(ROUTES), ctx);
  const post = rng.bool(0.4);
  const headers: [string, string][] = authHeader(rng, ctx);
  const body = post
    ? enc.encode(JSON.stringify(createBody(rng, sec)))
    : new Uint8Array();
  if (post) headers.push(["content-type", "application/json"]);
  const huge = () => "h".repeat(rng.pick([1_000, 8_000, 20_000, 70_000]));
  const bytes = () => String.fromCharCode(...enc.encode(rng.string(16)));
  let ownLength = false;
  let upgrade = false;
  switch (rng.int(0, 8)) {
    case 0:
      headers.push([
        rng.pick([
          "x-pad",
          "x-request-id",
          "idempotency-key",
          "cookie",
          "authorization",
        ]),
        huge(),
      ]);
      break;
    case 1:
      for (let i = 0, n = rng.int(50, 300); i < n; i++) {
        headers.push([`x-h${i}`, "v"]);
      }
      break;
    case 2: { // duplicates (secrets only where a credential goes: ids are echoed)
      const values: Record<string, string[]> = {
        authorization: [`Bearer ${sec}`, `Bearer ${ctx.tenantKey}`],
        "x-api-key": [sec, ctx.tenantKey],
        "content-type": ["application/json", "text/plain"],
        "idempotency-key": ["fz-dup-1", "fz-dup-2"],
        "x-request-id": ["fz-dup-1", "fz-dup-2"],
      };
      for (const [name, choices] of Object.entries(values)) {
        if (rng.bool()) headers.push([name, rng.pick(choices)]);
      }
      break;
    }
    case 3:
      headers.push([
        "x-request-id",
        rng.pick([
          "",
          "x".repeat(5000),
          "a\tb",
          bytes(),
          "../../etc",
          '{"a":1}',
        ]),
      ]);
      break;
    case 4:
      headers.push([
        "idempotency-key",
        rng.pick(["", " ", "k".repeat(300), bytes(), "a\u00ffb"]),
      ]);
      break;
    case 5:
      headers.push([
        "content-type",
        rng.pick([
          "text/plain",
          "application/json; charset=utf-16",
          "multipart/form-data; boundary=x",
          "application/x-www-form-urlencoded",
          "application/evil+json",
          "application/json, text/plain",
          "",
          bytes(),
        ]),
      ]);
      break;
    case 6: // odd credential forms
      headers.splice(
        0,
        headers.length,
        ...(post
          ? [["content-type", "application/json"]] as [string, string][]
          : []),
      );
      headers.push(rng.pick<[string, string]>([
        ["authorization", "Bearer"],
        ["authorization", `Basic ${sec}`],
        ["authorization", `Bearer ${sec} extra`],
        ["authorization", `bearer ${sec}`],
        ["authorization", `Bearer avk_${sec}_${sec}`],
        ["authorization", `Bearer eyJ${sec}.eyJ${sec}.${sec}`],
        ["authorization", `Bearer ${"k".repeat(20_000)}`],
        ["x-api-key", ""],
        ["x-api-key", `  ${sec}  `],
        ["authorization", `Bearer ${ctx.tenantKey}\u0000`],
      ]));
      break;
    case 7: // a wrong or duplicate length
      ownLength = true;
      headers.push([
        "content-length",
        rng.pick([
          "-1",
          "abc",
          "99999999999999999999",
          `${body.length}, ${body.length + 1}`,
          "0",
        ]),
      ]);
      break;
    default: // a WebSocket upgrade, mostly on the real media socket with its token
      upgrade = true;
      headers.push(["upgrade", "websocket"], [
        "connection",
        rng.pick(["upgrade", "Upgrade, close"]),
      ]);
      if (rng.bool()) {
        headers.push(["sec-websocket-version", rng.pick(["13", "8", ""])]);
      }
      if (rng.bool()) {
        headers.push(["sec-websocket-key", rng.pick(["", "x", sec])]);
      }
  }
  const token = `?token=${encodeURIComponent(ctx.clientToken)}`;
  const target = upgrade && rng.bool(0.8)
    ? `/v1/sessions/${ctx.sessionId}/ws${token}`
    : route.endsWith("/ws") && rng.bool(0.7)
    ? route + token
    : route;
  return {
    kind: "header",
    method: upgrade
      ? "GET"
      : post
      ? "POST"
      : rng.pick(["GET", "GET", "HEAD", "DELETE"]),
    target,
    headers,
    body,
    secrets: [sec],
    ownLength,
  };
}

/** Traversal, encoded bytes, very long paths, odd query strings. */
export function pathCase(rng: Rng, ctx: CaseContext): RestCase {
  const route = fillRoute(rng, rng.pick(ROUTES), ctx);
  const target = rng.pick([
    () => "/v1/../admin",
    () => "/v1/sessions/../../admin/keys",
    () => "/v1/%2e%2e/admin",
    () => `/v1/sessions/%2e%2e%2f%2e%2e%2f${rng.string(4)}`,
    () => "//v1//sessions",
    () => "/v1/./sessions/./",
    () => `${route}%00`,
    () => `${route}/%ff%fe`,
    () => "/v1/sessions/%c0%ae%c0%ae/end",
    () => "/v1/sessions/%",
    () => "/v1/sessions/%zz/status",
    () => `/v1/sessions/${"a".repeat(rng.pick([300, 5_000, 60_000]))}`,
    () => "/a".repeat(rng.int(100, 4000)),
    () => `${route}?force=%ff&force=true&force=`,
    () => `${route}?token=${"t".repeat(10_000)}`,
    () => `${route}?${"&".repeat(2000)}`,
    () => "http://evil.example/v1/sessions",
    () => "*",
    () => "\\v1\\sessions",
    () => String.fromCharCode(...enc.encode(`/v1/sessions/${rng.string(10)}`)),
    () => `${route}#frag`,
    () => `/docs/errors/${rng.string(20).replace(/[\s\0]/g, "")}`,
    () => `/static/${"../".repeat(5)}deno.json`,
    () => `/static/%2e%2e/%2e%2e/deno.json`,
  ])();
  return {
    kind: "path",
    method: target === "*"
      ? "OPTIONS"
      : rng.pick(["GET", "GET", "POST", "DELETE", "HEAD"]),
    target,
    headers: authHeader(rng, ctx),
    body: new Uint8Array(),
    secrets: [],
  };
}

/** Route `j % routes` with method `j / routes`: every route meets every method. */
export function matrixCase(rng: Rng, ctx: CaseContext, j: number): RestCase {
  const route = ROUTES[j % ROUTES.length];
  const method = METHODS[Math.floor(j / ROUTES.length) % METHODS.length];
  const sec = secret(rng);
  const headers = authHeader(rng, ctx);
  let body = new Uint8Array();
  if (method !== "GET" && method !== "HEAD" && rng.bool()) {
    headers.push(["content-type", "application/json"]);
    body = enc.encode(JSON.stringify(createBody(rng, sec)));
  }
  return {
    kind: "matrix",
    method,
    target: fillRoute(rng, route, ctx),
    headers,
    body,
    secrets: [sec],
  };
}
