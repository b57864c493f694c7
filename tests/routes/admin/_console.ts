/** Console test helpers: sign in through the real form and post forms like a browser. */
import assert from "node:assert/strict";
import { authJson, TEST_ADMIN_KEY, type TestApp } from "../../_helpers.ts";
import {
  eventByTenantKey,
  eventKey,
  type WebhookEventRecord,
} from "../../../lib/webhooks/events.ts";

export const ORIGIN = "http://localhost";

/** The value of the first `name="…" value="…"` hidden field `name` in `html`. */
export function hiddenField(html: string, name: string): string {
  const m = html.match(
    new RegExp(`name="${name}" value="([^"]*)"`),
  );
  assert.ok(m, `no ${name} field in the page`);
  return m[1];
}

/** `name=value` of cookie `name` from a response's Set-Cookie headers. */
export function cookieFrom(res: Response, name: string): string | null {
  for (const c of res.headers.getSetCookie()) {
    const pair = c.split(";")[0];
    if (pair.startsWith(`${name}=`)) return pair;
  }
  return null;
}

export interface Console {
  cookie: string;
  csrf: string;
}

/** Posts the sign-in form with `key`; returns the raw response. */
export async function postLogin(
  t: TestApp,
  key: string,
  options: { origin?: string | null } = {},
): Promise<Response> {
  const page = await t.request("/admin/login");
  const html = await page.text();
  const loginCookie = cookieFrom(page, "avtr_console_login")!;
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    cookie: loginCookie,
  };
  const origin = options.origin === undefined ? ORIGIN : options.origin;
  if (origin !== null) headers.origin = origin;
  return await t.request("/admin/login", {
    method: "POST",
    headers,
    body: new URLSearchParams({
      _csrf: hiddenField(html, "_csrf"),
      next: "/admin/sessions",
      api_key: key,
    }),
    redirect: "manual",
  });
}

/** Signs in with `key` (ADMIN_API_KEY by default) and returns the cookie and CSRF token. */
export async function signIn(
  t: TestApp,
  key = TEST_ADMIN_KEY,
): Promise<Console> {
  const res = await postLogin(t, key);
  assert.equal(res.status, 303, await res.text());
  const cookie = cookieFrom(res, "avtr_console");
  assert.ok(cookie, "no session cookie");
  const page = await t.request("/admin/keys", { headers: { cookie } });
  assert.equal(page.status, 200);
  return { cookie, csrf: hiddenField(await page.text(), "_csrf") };
}

/** GETs a console page as the signed-in operator. */
export function get(t: TestApp, c: Console, path: string): Promise<Response> {
  return t.request(path, { headers: { cookie: c.cookie }, redirect: "manual" });
}

/** Posts a console form (with the session's CSRF token unless `fields` sets one). */
export function post(
  t: TestApp,
  c: Console | null,
  path: string,
  fields: Record<string, string | string[]>,
  options: { origin?: string | null } = {},
): Promise<Response> {
  const body = new URLSearchParams();
  if (c && !("_csrf" in fields)) body.set("_csrf", c.csrf);
  for (const [k, v] of Object.entries(fields)) {
    for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
  }
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
  };
  if (c) headers.cookie = c.cookie;
  const origin = options.origin === undefined ? ORIGIN : options.origin;
  if (origin !== null) headers.origin = origin;
  return t.request(path, { method: "POST", headers, body, redirect: "manual" });
}

/** Mints a key through /v1 with the admin key; returns its id and plaintext. */
export async function mintViaApi(
  t: TestApp,
  body: Record<string, unknown>,
): Promise<{ key_id: string; api_key: string }> {
  const res = await t.request("/v1/api-keys", {
    method: "POST",
    headers: authJson(TEST_ADMIN_KEY),
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 201, await res.clone().text());
  return await res.json();
}

/** Creates an external_engine session through /v1 with `key`; returns its id. */
export async function createSessionViaApi(
  t: TestApp,
  key = TEST_ADMIN_KEY,
): Promise<string> {
  const res = await t.request("/v1/sessions", {
    method: "POST",
    headers: authJson(key),
    body: JSON.stringify({
      provider_type: "external_engine",
      provider_config: {
        external_engine: { url: "wss://engine.example/ws", auth_headers: {} },
      },
      transport: "websocket_fmp4",
    }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()).session_id;
}

/** Stores a dead-lettered webhook event of `tenant` (10 failed attempts) and returns it. */
export async function storeDeadEvent(
  t: TestApp,
  tenant: string,
  eventId: string,
  url = `https://hooks.example/${tenant}`,
): Promise<WebhookEventRecord> {
  const deps = t.app.deps;
  const now = deps.now();
  const record: WebhookEventRecord = {
    event_id: eventId,
    tenant_id: tenant,
    session_id: "session:abc",
    type: "session.created",
    url,
    body: "{}",
    created_at: now,
    state: "dead",
    attempts: 10,
    final_attempt: 10,
    last_attempt_at: now,
    last_result: "HTTP 500",
    dead_reason: "retries exhausted",
    expires_at: now + 86_400_000,
  };
  await deps.kv.atomic()
    .set(eventKey(record.event_id), record)
    .set(eventByTenantKey(tenant, record.event_id), record.event_id)
    .commit();
  return record;
}
