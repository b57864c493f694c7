/**
 * `/metrics` (DECISIONS 10): served only with `METRICS_TOKEN` set and to its bearer
 * token, else the 404 of an unknown path; Prometheus' text format with bounded labels —
 * route templates, never a session id or a path.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../lib/config.ts";
import {
  authJson,
  engineCreateBody,
  TEST_ADMIN_KEY,
  testApp,
} from "../_helpers.ts";
import { driveTo } from "./v1/sessions/_helpers.ts";
import { readSession } from "../../lib/sessions.ts";

const TOKEN = "metrics-token-0123456789abcdefghij";

/** A 404's status, content type and body, without the per-request id. */
async function notFound(res: Response) {
  const body = await res.json();
  delete body.error?.request_id;
  delete body.request_id;
  return { status: res.status, type: res.headers.get("content-type"), body };
}

Deno.test("/metrics answers as an unknown path without METRICS_TOKEN, or to a wrong token", async (t) => {
  const unknown = await testApp();
  const withToken = await testApp({ METRICS_TOKEN: TOKEN });
  try {
    const expected = await notFound(await unknown.request("/no-such-path"));
    assert.equal(expected.status, 404);
    const cases: [string, typeof unknown, HeadersInit][] = [
      ["no METRICS_TOKEN, the right header", unknown, {
        authorization: `Bearer ${TOKEN}`,
      }],
      ["no header", withToken, {}],
      ["another token", withToken, { authorization: `Bearer ${TOKEN}x` }],
      ["a prefix of it", withToken, {
        authorization: `Bearer ${TOKEN.slice(0, -1)}`,
      }],
      ["not a bearer", withToken, { authorization: `Basic ${TOKEN}` }],
    ];
    for (const [name, app, headers] of cases) {
      await t.step(name, async () => {
        const res = await app.request("/metrics", { headers });
        assert.deepEqual(await notFound(res), expected);
      });
    }
  } finally {
    await unknown.close();
    await withToken.close();
  }
});

Deno.test("/metrics counts requests by route template, and names no session", async () => {
  const app = await testApp({ METRICS_TOKEN: TOKEN });
  try {
    const created = await app.request("/v1/sessions", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
      body: JSON.stringify(engineCreateBody()),
    });
    assert.equal(created.status, 200);
    const { session_id } = await created.json();
    const read = await app.request(`/v1/sessions/${session_id}`, {
      headers: authJson(TEST_ADMIN_KEY),
    });
    await read.body?.cancel();
    const res = await app.request("/metrics", {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(res.status, 200);
    assert.match(
      res.headers.get("content-type")!,
      /^text\/plain; version=0\.0\.4/,
    );
    const text = await res.text();
    assert.match(
      text,
      /avatar_http_requests_total\{route="\/v1\/sessions",method="POST",status="200"\} 1/,
    );
    assert.match(
      text,
      /avatar_http_requests_total\{route="\/v1\/sessions\/:session_id",method="GET",status="200"\} 1/,
    );
    assert.match(
      text,
      /avatar_http_request_duration_seconds_bucket\{le="0\.1",route="\/v1\/sessions"/,
    );
    assert.match(text, /avatar_render_slots\{state="free"\} \d+/);
    // The create's and the read's KV operations, by kind and key prefix.
    assert.match(
      text,
      /avatar_kv_operations_total\{op="commit",prefix="[a-z_]+",result="ok"\} \d+/,
    );
    assert.match(
      text,
      /avatar_kv_operation_duration_seconds_count\{op="get_many"\} \d+/,
    );
    assert.match(text, /avatar_process_memory_bytes\{kind="rss"\} \d+/);
    assert.ok(!text.includes(session_id), "no session id in the metrics");
    assert.ok(!text.includes(TOKEN), "no token in the metrics");
  } finally {
    await app.close();
  }
});

Deno.test("METRICS_TOKEN shorter than 24 characters is a configuration error", () => {
  assert.throws(
    () => loadConfig({ METRICS_TOKEN: "short-token" }),
    /METRICS_TOKEN must be at least 24 characters/,
  );
  assert.equal(loadConfig({ METRICS_TOKEN: "" }).metricsToken, undefined);
});

Deno.test("/metrics counts sessions created and ended by transport, avatar kind, provider and reason; a tenant only when asked", async (t) => {
  for (const tenantLabel of [false, true]) {
    await t.step(`METRICS_TENANT_LABEL=${tenantLabel}`, async () => {
      const app = await testApp({
        METRICS_TOKEN: TOKEN,
        RENDER_MAX_SESSIONS: "8",
        MAX_CONCURRENT_SESSIONS: "8",
        ...(tenantLabel ? { METRICS_TENANT_LABEL: "true" } : {}),
      });
      try {
        const deps = app.app.deps;
        const ids: string[] = [];
        for (let k = 0; k < 3; k++) {
          const created = await app.request("/v1/sessions", {
            method: "POST",
            headers: authJson(TEST_ADMIN_KEY),
            body: JSON.stringify(engineCreateBody()),
          });
          assert.equal(created.status, 200);
          ids.push((await created.json()).session_id);
        }
        // Two end, one after being active, one failing to start; one is live.
        await driveTo(deps, ids[0], "ended");
        await driveTo(deps, ids[1], "failed");
        await driveTo(deps, ids[2], "active");
        const tenant = tenantLabel
          ? (await readSession(deps, ids[0]))!.tenant_id
          : "";
        const text = await (await app.request("/metrics", {
          headers: { authorization: `Bearer ${TOKEN}` },
        })).text();
        const line = (name: string, labels: string) =>
          text.split("\n").find((l) => l.startsWith(`${name}{${labels}}`));
        assert.equal(
          line(
            "avatar_sessions_created_total",
            `transport="websocket_fmp4",avatar_kind="builtin",provider="external_engine",tenant="${tenant}"`,
          ),
          `avatar_sessions_created_total{transport="websocket_fmp4",avatar_kind="builtin",provider="external_engine",tenant="${tenant}"} 3`,
          text,
        );
        for (
          const [reason, status] of [["requested", "ended"], [
            "start_failed",
            "failed",
          ]]
        ) {
          assert.match(
            line(
              "avatar_sessions_ended_total",
              `reason="${reason}",status="${status}",transport="websocket_fmp4",avatar_kind="builtin",provider="external_engine",tenant="${tenant}"`,
            ) ?? "",
            / 1$/,
            text,
          );
        }
        assert.match(
          text,
          /avatar_session_duration_seconds_count\{transport="websocket_fmp4",avatar_kind="builtin"\} 1/,
        );
        for (const id of ids) assert.ok(!text.includes(id), "no session id");
        if (!tenantLabel) assert.ok(!/tenant="[^"]/.test(text), "no tenant");
      } finally {
        await app.close();
      }
    });
  }
});
