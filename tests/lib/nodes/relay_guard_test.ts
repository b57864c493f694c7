/**
 * A relay never loops (issue 22): an instance never relays to itself (by id or by URL:
 * a restarted process at its predecessor's `INSTANCE_URL`), and a socket that already
 * came through a relay (its signed mark) is answered where it lands, never relayed on.
 * A mark a client makes up is refused.
 */
import assert from "node:assert/strict";
import { instanceKey } from "../../../lib/media/presence.ts";
import {
  checkRelayMark,
  RELAY_HEADER,
  RELAY_MARK_MAX_SKEW_MS,
  signRelayMark,
} from "../../../lib/media/relay_mark.ts";
import { Browser, type LiveStack } from "../media/_live.ts";
import { NODE_SECRET, startTopology } from "./_topology.ts";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import { holderSocketUrl } from "../../../lib/media/relay.ts";

/** Moves `sessionId` to a dead instance whose fresh record names `url`. */
async function orphan(
  kv: Deno.Kv,
  sessionId: string,
  url: string,
): Promise<void> {
  const key = ["sessions", sessionId];
  const entry = await kv.get<Record<string, unknown>>(key);
  await kv.set(key, { ...entry.value, owner: "dead-instance" });
  await kv.set(instanceKey("dead-instance"), {
    started_at: Date.now() - 60_000,
    heartbeat_at: Date.now(),
    url,
    role: "media",
    render: { free: 4, max: 4 },
    sfu: false,
  });
}

async function fatal(b: Browser): Promise<void> {
  await b.until(
    () => b.json.some((m) => m.code === "invalid_session") || undefined,
    "invalid_session",
  );
}

Deno.test("a node restarted at its predecessor's URL answers the old sessions' sockets itself (invalid_session), never relays to itself", async () => {
  const topo = await startTopology([{}]);
  try {
    const node = topo.nodes[0];
    const created = await (await topo.create()).json();
    // The session's holder died; the node now at its URL is a new process.
    await orphan(topo.kv, created.session_id, node.base);
    const b = Browser.connect(
      node as unknown as LiveStack,
      created.session_id,
      created.client_token,
    );
    await b.opened;
    await fatal(b);
    await b.closed();
  } finally {
    await topo.close();
  }
});

Deno.test("a socket that came through a relay is never relayed again, even when the holder's URL leads back", async () => {
  const topo = await startTopology([{}]);
  try {
    const node = topo.nodes[0];
    const created = await (await topo.create()).json();
    // The dead holder's URL reaches this node, which knows itself by another URL (a
    // proxy's): only the relay mark stops the second hop.
    await orphan(topo.kv, created.session_id, node.base);
    node.app.deps.instanceUrl = "https://node-behind-a-proxy.example";
    const b = Browser.connect(
      node as unknown as LiveStack,
      created.session_id,
      created.client_token,
    );
    await b.opened;
    await fatal(b);
    await b.closed();
    // No relay is left running on the node (a loop would keep chaining them).
    const relayed = node.log.lines.filter((l) => l.includes("relay")).length;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(
      node.log.lines.filter((l) => l.includes("relay")).length,
      relayed,
    );
  } finally {
    await topo.close();
  }
});

Deno.test("a relay mark a client makes up is refused before the upgrade", async () => {
  const topo = await startTopology([{}]);
  try {
    const created = await (await topo.create()).json();
    const url = `${topo.control.base}/v1/sessions/${
      encodeURIComponent(created.session_id)
    }/ws?token=${encodeURIComponent(created.client_token)}`;
    const res = await fetch(url, {
      headers: {
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
        [RELAY_HEADER]: `t=${Date.now()},v1=${"ab".repeat(32)}`,
      },
    });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "AVTR_REQUEST_INVALID");
  } finally {
    await topo.close();
  }
});

Deno.test("a control plane relays to https node URLs only (http only with ALLOW_PRIVATE_NETWORK_TARGETS), as it hands off", async () => {
  const kv = await Deno.openKv(":memory:");
  const control = await createDeps({
    kv,
    env: { KV_PATH: ":memory:", NODE_SECRET, SERVICE_ROLE: "control" },
  });
  try {
    for (
      const [id, url] of [["plain", "http://10.0.0.5:8000"], [
        "tls",
        "https://node.example",
      ]]
    ) {
      await kv.set(instanceKey(id), {
        started_at: Date.now(),
        heartbeat_at: Date.now(),
        url,
        role: "media",
      });
    }
    assert.equal(
      await holderSocketUrl(control, "plain", "session:x", "t"),
      null,
    );
    assert.equal(
      await holderSocketUrl(control, "tls", "session:x", "t"),
      "wss://node.example/v1/sessions/session%3Ax/ws?token=t",
    );
  } finally {
    await closeDeps(control); // closes `kv` too
  }
});

const MARK_SECRET = new TextEncoder().encode(NODE_SECRET);

Deno.test("relay marks: valid for their node and session only, fresh, under the shared secret", () => {
  const now = Date.now();
  const mark = signRelayMark(MARK_SECRET, "node-a", "session:x", now);
  const check = (
    h: string | null,
    node = "node-a",
    sid = "session:x",
    at = now,
  ) => checkRelayMark([MARK_SECRET], h, node, sid, at);
  assert.equal(check(mark), "valid");
  assert.equal(check(null), "absent");
  assert.equal(check(mark, "node-b"), "invalid");
  assert.equal(check(mark, "node-a", "session:y"), "invalid");
  assert.equal(
    check(mark, "node-a", "session:x", now + RELAY_MARK_MAX_SKEW_MS + 1),
    "invalid",
  );
  assert.equal(check("t=1,v1=zz"), "invalid");
  assert.equal(
    checkRelayMark(
      [new TextEncoder().encode("z".repeat(40))],
      mark,
      "node-a",
      "session:x",
      now,
    ),
    "invalid",
  );
});
