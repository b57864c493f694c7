/**
 * A media node's handoff endpoint under attack (issue 22): what can be refused without
 * the body is refused before a byte of it is read, every failure counts against its
 * address as it arrives, signed calls are never refused for their address, body reads
 * are capped, and signatures bind the node and are taken once across nodes (KV).
 */
import assert from "node:assert/strict";
import { HANDOFF_PATH } from "../../../lib/nodes/handoff.ts";
import { MAX_BODY_READS } from "../../../lib/nodes/accept.ts";
import {
  firstUse,
  parseSignature,
  SIGNATURE_HEADER,
  signCall,
} from "../../../lib/nodes/signing.ts";
import { instanceKey } from "../../../lib/media/presence.ts";
import {
  engineBody,
  NODE_SECRET,
  type Served,
  startTopology,
} from "./_topology.ts";
import { rawRequest, stalledRequest } from "./_raw_http.ts";

const enc = new TextEncoder();
const SECRET = enc.encode(NODE_SECRET);
const portOf = (s: Served) => s.server.addr.port;
const sign = (node: Served, body: Uint8Array, at = Date.now()) =>
  signCall(
    SECRET,
    { method: "POST", path: HANDOFF_PATH, node: node.app.deps.instanceId },
    body,
    at,
  );
const handoffBody = (
  topo: { engine: Parameters<typeof engineBody>[0] },
  i = 0,
) =>
  enc.encode(JSON.stringify({
    session_id: `session:01M83AHJ0NN1B3HBT5F5PWK4X${i}`,
    tenant_id: "acme",
    body: engineBody(topo.engine),
  }));
const head = (extra: string[]) =>
  [
    `POST ${HANDOFF_PATH} HTTP/1.1`,
    "host: node",
    "content-type: application/json",
    ...extra,
  ].join("\n");

Deno.test("unsigned handoffs that spend the address window never block signed creates (the control plane shares the proxy's address)", async () => {
  const topo = await startTopology([{ RATE_LIMIT_PER_MINUTE: "3" }]);
  try {
    const node = topo.nodes[0];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(node.base + HANDOFF_PATH, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      await res.body?.cancel();
      assert.equal(res.status, i < 3 ? 401 : 429);
    }
    // The control plane calls from the same address; its signed handoff goes through.
    const res = await topo.create();
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(await topo.ownerOf((await res.json()).session_id), node);
  } finally {
    await topo.close();
  }
});

Deno.test("missing or oversized Content-Length and stale, malformed or other-node signatures are refused before the body, each counted", async () => {
  const topo = await startTopology([{
    RATE_LIMIT_PER_MINUTE: "7",
    REQUEST_BODY_TIMEOUT_MS: "300",
  }]);
  try {
    const node = topo.nodes[0];
    const body = handoffBody(topo);
    const stale = sign(node, body, Date.now() - 60_000);
    const forOther = signCall(
      SECRET,
      { method: "POST", path: HANDOFF_PATH, node: "another-node" },
      body,
      Date.now(),
    );
    // Each declares a body it never sends: only an answer without reading it comes back.
    const cases: [string[], number][] = [
      [
        [`${SIGNATURE_HEADER}: ${stale}`, `content-length: ${body.length}`],
        401,
      ],
      [
        [`${SIGNATURE_HEADER}: ${forOther}`, `content-length: ${body.length}`],
        401,
      ],
      [
        [`${SIGNATURE_HEADER}: t=1,v1=abc`, `content-length: ${body.length}`],
        401,
      ],
      [[
        `${SIGNATURE_HEADER}: ${sign(node, body)}`,
        "transfer-encoding: chunked",
      ], 400],
      [
        [
          `${SIGNATURE_HEADER}: ${sign(node, body)}`,
          "content-length: 99999999",
        ],
        413,
      ],
    ];
    for (const [headers, status] of cases) {
      const t0 = Date.now();
      const res = await rawRequest(
        portOf(node),
        head(headers),
        undefined,
        2_000,
      );
      assert.ok(res, `answered without the body: ${headers.join(" | ")}`);
      assert.equal(res.status, status, headers.join(" | "));
      assert.ok(Date.now() - t0 < 1_000);
    }
    // A valid head whose body stalls: 408 at the handoff's deadline, counted too.
    const slow = await rawRequest(
      portOf(node),
      head([
        `${SIGNATURE_HEADER}: ${sign(node, body)}`,
        `content-length: ${body.length}`,
      ]),
      body.subarray(0, 10),
      2_000,
    );
    assert.equal(slow?.status, 408);
    // A body that does not match its MAC: 401, counted: the seventh failure.
    const wrong = enc.encode(
      JSON.stringify({ x: "y".repeat(body.length - 8) }),
    );
    const bad = await fetch(node.base + HANDOFF_PATH, {
      method: "POST",
      headers: {
        [SIGNATURE_HEADER]: sign(node, body).replace(
          /l=\d+/,
          `l=${wrong.length}`,
        ),
      },
      body: wrong,
    });
    await bad.body?.cancel();
    assert.equal(bad.status, 401);
    // Seven failures spent the window of 7: the next failure is 429.
    const spent = await rawRequest(
      portOf(node),
      head([`${SIGNATURE_HEADER}: ${stale}`, `content-length: ${body.length}`]),
    );
    assert.equal(spent?.status, 429);
  } finally {
    await topo.close();
  }
});

Deno.test(`at most ${MAX_BODY_READS} handoff bodies are read at once; the next is 503 unread`, async () => {
  const topo = await startTopology([{ REQUEST_BODY_TIMEOUT_MS: "4000" }]);
  const conns: Deno.TcpConn[] = [];
  try {
    const node = topo.nodes[0];
    const body = handoffBody(topo);
    const headers = () =>
      head([
        `${SIGNATURE_HEADER}: ${sign(node, body)}`,
        `content-length: ${body.length}`,
      ]);
    for (let i = 0; i < MAX_BODY_READS; i++) {
      conns.push(
        await stalledRequest(portOf(node), headers(), body.subarray(0, 5)),
      );
    }
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    const res = await rawRequest(portOf(node), headers(), undefined, 2_000);
    assert.equal(res?.status, 503);
    assert.ok(Date.now() - t0 < 1_000);
  } finally {
    for (const c of conns) c.close();
    await topo.close();
  }
});

Deno.test("a handoff signature is taken once across nodes: a replay to the same node, another node or after a restart is refused", async () => {
  const topo = await startTopology([{}, {}]);
  try {
    const [a, b] = topo.nodes;
    const body = handoffBody(topo);
    const header = sign(a, body);
    const post = (n: Served) =>
      fetch(n.base + HANDOFF_PATH, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          [SIGNATURE_HEADER]: header,
        },
        body,
      });
    const first = await post(a);
    assert.equal(first.status, 201, await first.clone().text());
    await first.body?.cancel();
    for (const n of [a, b]) {
      const again = await post(n);
      assert.equal(again.status, 401);
      await again.body?.cancel();
    }
    // The guard is KV's, not a process's: another process on the same KV refuses it.
    const sig = parseSignature(header)!;
    assert.equal(await firstUse(b.app.deps, sig), false);
    const fresh = parseSignature(sign(a, handoffBody(topo, 1)))!;
    assert.equal(await firstUse(b.app.deps, fresh), true);
    assert.equal(await firstUse(a.app.deps, fresh), false);
  } finally {
    await topo.close();
  }
});

Deno.test("a node that answers 429 or 503 is skipped for the next node; its 429 is never the create's answer", async () => {
  const topo = await startTopology([{ RENDER_MAX_SESSIONS: "2" }]);
  const answers = [
    { status: 429, code: "AVTR_RATE_LIMIT_EXCEEDED" },
    { status: 503, code: "AVTR_PROVIDER_UNAVAILABLE" },
  ];
  const fakes = answers.map(({ status, code }) =>
    Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (req) => {
        await req.body?.cancel();
        return Response.json({ code, message: "no", retry_after: 60 }, {
          status,
        });
      },
    )
  );
  try {
    // Two refusing "nodes" with more free slots than the real one: they are tried first.
    for (const [i, f] of fakes.entries()) {
      await topo.kv.set(instanceKey(`fake-${i}`), {
        started_at: Date.now(),
        heartbeat_at: Date.now(),
        url: `http://127.0.0.1:${f.addr.port}`,
        role: "media",
        render: { free: 100, max: 100 },
        sfu: false,
      });
    }
    const res = await topo.create();
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(
      await topo.ownerOf((await res.json()).session_id),
      topo.nodes[0],
    );
    // With the real node gone too, every node refused: a 503, not the node's 429.
    await topo.kv.delete(instanceKey(topo.nodes[0].app.deps.instanceId));
    topo.nodes[0].app.deps.instanceUrl = undefined;
    const none = await topo.create();
    const err = await none.json();
    assert.equal(none.status, 503);
    assert.equal(err.code, "AVTR_PROVIDER_UNAVAILABLE");
  } finally {
    for (const f of fakes) await f.shutdown();
    await topo.close();
  }
});
