/** Fixtures shared by the session route tests. */
import assert from "node:assert/strict";
import type { z } from "zod";
import {
  authJson,
  TEST_ADMIN_KEY,
  type TestApp,
  testApp,
  type TestClock,
} from "../../../_helpers.ts";
import { createApiKey } from "../../../../lib/auth/api_keys.ts";
import type { AppDeps } from "../../../../lib/deps.ts";
import { ERROR_CODES, type ErrorCode } from "../../../../lib/errors.ts";
import { OPERATOR, type Scope } from "../../../../lib/principal.ts";
import type { ProviderType } from "../../../../lib/ports/providers.ts";
import {
  errorBodySchema,
  type SessionStatus,
} from "../../../../lib/api/schemas.ts";
import { type MoveOptions, moveSession } from "../../../../lib/sessions.ts";

/** The real app on `:memory:` KV (or `kv`) with room for many sessions (render slots, limit). */
export function sessionApp(
  env: Record<string, string | undefined> = {},
  options: { clock?: TestClock; kv?: Deno.Kv } = {},
): Promise<TestApp> {
  return testApp(
    { RENDER_MAX_SESSIONS: "64", MAX_CONCURRENT_SESSIONS: "64", ...env },
    options,
  );
}

/** A valid create body for each provider type. */
export function validBody(
  type: ProviderType = "vendor_b",
): Record<string, unknown> {
  const configs: Record<ProviderType, Record<string, unknown>> = {
    vendor_a_realtime: { client_secret: "ek_test_secret" },
    vendor_b: { access_token: "tok_test", agent_id: "agent_1" },
    external_engine: {
      url: "wss://engine.example.com/v1/engine",
      auth_headers: { authorization: "Bearer engine-key" },
    },
    vendor_c: { agent_id: "agent_c" },
  };
  return { provider_type: type, provider_config: { [type]: configs[type] } };
}

/** POSTs a create with `key` (the admin key by default). */
export function postCreate(
  t: TestApp,
  body: unknown,
  options: { key?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  return t.request("/v1/sessions", {
    method: "POST",
    headers: authJson(options.key ?? TEST_ADMIN_KEY, options.headers),
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** Calls `path` with `key` (the admin key by default) as the bearer token. */
export function keyRequest(
  t: TestApp,
  path: string,
  options: { method?: string; key?: string } = {},
): Promise<Response> {
  return t.request(path, {
    method: options.method ?? "GET",
    headers: { authorization: `Bearer ${options.key ?? TEST_ADMIN_KEY}` },
  });
}

/** Creates a session and returns its id (asserting 200). */
export async function createOk(
  t: TestApp,
  body: unknown = validBody(),
  key?: string,
): Promise<string> {
  const res = await postCreate(t, body, { key });
  const json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  return json.session_id;
}

/** An API key for `tenant` with `scopes` (both session scopes by default). */
export async function tenantKey(
  deps: AppDeps,
  tenant: string,
  scopes: Scope[] = ["sessions:read", "sessions:write"],
): Promise<string> {
  return (await createApiKey(deps, OPERATOR, { tenant_id: tenant, scopes }))
    .api_key;
}

const PATH_TO: Record<SessionStatus, SessionStatus[]> = {
  created: [],
  activating: ["activating"],
  active: ["activating", "active"],
  ending: ["activating", "active", "ending"],
  ended: ["activating", "active", "ending", "ended"],
  ended_with_warnings: [
    "activating",
    "active",
    "ending",
    "ended_with_warnings",
  ],
  failed: ["failed"],
};

const PREVIOUS: Record<SessionStatus, SessionStatus[]> = {
  created: [],
  activating: ["created"],
  active: ["activating"],
  ending: ["active"],
  ended: ["ending"],
  ended_with_warnings: ["ending"],
  failed: ["created", "activating"],
};

/** The options of a move to `to`, with a reason where one is needed. */
export function moveTo(
  from: SessionStatus[],
  to: SessionStatus,
): MoveOptions {
  if (to === "created" || to === "activating" || to === "active") {
    return { from, to };
  }
  return { from, to, reason: to === "failed" ? "start_failed" : "requested" };
}

/** Drives a `created` session to `status` through the lifecycle moves. */
export async function driveTo(
  deps: AppDeps,
  id: string,
  status: SessionStatus,
): Promise<void> {
  for (const to of PATH_TO[status]) {
    const r = await moveSession(deps, id, moveTo(PREVIOUS[to], to));
    assert.equal(r.ok, true, `move to ${to}`);
  }
}

/** Asserts an error response: status, code, param, and the flat body's schema. */
export async function assertError(
  res: Response,
  code: ErrorCode,
  param?: string,
): Promise<z.output<typeof errorBodySchema>> {
  const text = await res.text();
  assert.equal(res.status, ERROR_CODES[code].status, text);
  const body = errorBodySchema.parse(JSON.parse(text));
  assert.equal(body.code, code, text);
  assert.equal(body.param, param, text);
  assert.equal(body.request_id, res.headers.get("x-request-id"));
  if (ERROR_CODES[code].retryable) {
    assert.equal(res.headers.get("retry-after"), String(body.retry_after));
  } else {
    assert.equal(res.headers.get("retry-after"), null);
  }
  return body;
}

/** [name, body, code, param]: one create body the service refuses. */
export type RefusedCase = [string, unknown, ErrorCode, string | undefined];

/**
 * Posts each case to one fresh app as a step and asserts its error; then that nothing
 * was stored and no credential or render slot is held.
 */
export async function assertRefusesEach(
  t: Deno.TestContext,
  cases: RefusedCase[],
): Promise<void> {
  const app = await sessionApp();
  try {
    for (const [name, body, code, param] of cases) {
      await t.step(name, async () => {
        await assertError(await postCreate(app, body), code, param);
      });
    }
    await t.step("nothing was stored and no credential is held", async () => {
      const entries = await Array.fromAsync(
        app.app.deps.kv.list({ prefix: ["sessions"] }),
      );
      assert.equal(entries.length, 0);
      assert.equal(app.app.deps.vault.size, 0);
      assert.equal(app.app.deps.renderSlots.inUse, 0);
    });
  } finally {
    await app.close();
  }
}
