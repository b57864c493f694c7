/**
 * Traces (DECISIONS 10): a service run with Deno's OpenTelemetry (`OTEL_DENO=true`)
 * exports a create as one trace — the HTTP server's span with the request's id, and under
 * it `session.create` with its phases — to a real OTLP/HTTP receiver (JSON), and no
 * attribute carries a credential, a token or the engine's URL.
 */
import assert from "node:assert/strict";
import { TEST_ADMIN_KEY } from "../../_helpers.ts";
import { startInstance } from "../media/_instance.ts";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

/** An OTLP/HTTP receiver of JSON traces on loopback. */
function receiver() {
  const spans: OtlpSpan[] = [];
  const bodies: string[] = [];
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (req) => {
      const text = await req.text();
      bodies.push(text);
      if (new URL(req.url).pathname === "/v1/traces") {
        const body = JSON.parse(text);
        for (const rs of body.resourceSpans ?? []) {
          for (const ss of rs.scopeSpans ?? []) spans.push(...ss.spans ?? []);
        }
      }
      return Response.json({});
    },
  );
  return {
    spans,
    bodies,
    url: `http://127.0.0.1:${server.addr.port}`,
    close: () => server.shutdown(),
  };
}

const attr = (s: OtlpSpan, key: string) =>
  s.attributes?.find((a) => a.key === key)?.value;

Deno.test("a create is one trace: the HTTP span with the request id, session.create and its phases under it; no secret in any attribute", async () => {
  const rx = receiver();
  const dir = await Deno.makeTempDir({ prefix: "avatar-otel-" });
  const inst = await startInstance(`${dir}/kv.sqlite3`, {
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "avatar-test",
  });
  const engineSecret = "engine-secret-for-the-trace-test";
  try {
    const res = await fetch(`${inst.base}/v1/sessions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_ADMIN_KEY}`,
        "content-type": "application/json",
        "x-request-id": "trace-test-request-1",
      },
      body: JSON.stringify({
        provider_type: "external_engine",
        provider_config: {
          external_engine: {
            url: "wss://engine.example.com/v1?k=secret-query",
            auth_headers: { authorization: `Bearer ${engineSecret}` },
          },
        },
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const { session_id } = await res.json();
    // Spans are exported in batches and at exit: stop the service, then read.
    await inst.stop();
    const create = rx.spans.find((s) => s.name === "session.create");
    assert.ok(create, `spans: ${rx.spans.map((s) => s.name)}`);
    assert.equal(attr(create, "session.id")?.stringValue, session_id);
    const server = rx.spans.find((s) => s.spanId === create.parentSpanId);
    assert.ok(server, "session.create's parent is exported");
    assert.equal(
      attr(server, "request_id")?.stringValue,
      "trace-test-request-1",
    );
    for (
      const phase of [
        "session.validate",
        "session.reserve",
        "session.preflight",
        "session.commit",
      ]
    ) {
      const p = rx.spans.find((s) => s.name === phase);
      assert.ok(p, `${phase} exported`);
      assert.equal(p.traceId, create.traceId, `${phase} in the create's trace`);
      assert.equal(p.parentSpanId, create.spanId, `${phase} under it`);
    }
    const all = rx.bodies.join("\n");
    for (
      const secret of [
        engineSecret,
        TEST_ADMIN_KEY,
        "secret-query",
      ]
    ) {
      assert.ok(!all.includes(secret), `${secret} exported`);
    }
  } finally {
    await inst.stop();
    await rx.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a hand-off is one trace: the control plane's create, its fetch, and the media node's start under it", async () => {
  const rx = receiver();
  const dir = await Deno.makeTempDir({ prefix: "avatar-otel-handoff-" });
  const kvPath = `${dir}/kv.sqlite3`;
  const env = (role: string, name: string) => ({
    SERVICE_ROLE: role,
    NODE_SECRET: "trace-test-node-secret-0123456789abcdef",
    NODE_HEARTBEAT_MS: "300",
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: name,
  });
  const control = await startInstance(kvPath, env("control", "control"));
  const node = await startInstance(kvPath, env("media", "node"));
  try {
    // The node registered: the control plane's readiness says so.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const r = await (await fetch(`${control.base}/readyz`)).json();
      if (r.checks?.media_nodes === "ok") break;
      assert.ok(Date.now() < deadline, "the media node never registered");
      await new Promise((r) => setTimeout(r, 100));
    }
    const res = await fetch(`${control.base}/v1/sessions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_ADMIN_KEY}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        provider_type: "external_engine",
        provider_config: {
          external_engine: {
            url: "wss://engine.example.com/v1",
            auth_headers: {},
          },
        },
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    await control.stop();
    await node.stop();
    const create = rx.spans.find((s) => s.name === "session.create");
    assert.ok(create, `spans: ${rx.spans.map((s) => s.name)}`);
    assert.equal(attr(create, "session.hand_off")?.boolValue, true);
    const handOff = rx.spans.find((s) => s.name === "session.hand_off");
    assert.ok(handOff && handOff.parentSpanId === create.spanId);
    // The node's start: in the create's trace, under its hand-off.
    const commit = rx.spans.find((s) => s.name === "session.commit");
    assert.ok(commit, "the node's commit exported");
    assert.equal(commit.traceId, create.traceId, "one trace");
    const byId = new Map(rx.spans.map((s) => [s.spanId, s]));
    let up = commit, hops = 0;
    while (up.parentSpanId && byId.has(up.parentSpanId) && hops++ < 10) {
      up = byId.get(up.parentSpanId)!;
      if (up.spanId === handOff.spanId) break;
    }
    assert.equal(
      up.spanId,
      handOff.spanId,
      "the node's spans under the hand-off",
    );
  } finally {
    await control.stop();
    await node.stop();
    await rx.close();
    await Deno.remove(dir, { recursive: true });
  }
});
