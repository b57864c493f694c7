/**
 * The handoff call's authentication (lib/nodes/signing.ts, lib/nodes/accept.ts): only a
 * media node answers `POST /internal/v1/sessions`; it takes a call signed with
 * `NODE_SECRET` over its exact bytes within 30 s of its clock, once.
 */
import assert from "node:assert/strict";
import {
  MAX_SKEW_MS,
  parseSignature,
  SIGNATURE_HEADER,
  signCall,
  verifyBody,
  verifyHead,
} from "../../../lib/nodes/signing.ts";
import { HANDOFF_PATH } from "../../../lib/nodes/handoff.ts";
import {
  engineBody,
  NODE_SECRET,
  type Served,
  startTopology,
} from "./_topology.ts";

const enc = new TextEncoder();
const SECRET = enc.encode(NODE_SECRET);
/** What a handoff to `node` signs. */
const targetOf = (node: Served) => ({
  method: "POST",
  path: HANDOFF_PATH,
  node: node.app.deps.instanceId,
});

const TARGET = { method: "POST", path: HANDOFF_PATH, node: "node-a" };

Deno.test("verifyHead()/verifyBody() take their own signature, and refuse any change, another node, another secret or a stale time", () => {
  const now = Date.now();
  const body = enc.encode('{"a":1}');
  const header = signCall(SECRET, TARGET, body, now);
  const sig = parseSignature(header)!;
  assert.ok(sig);
  assert.equal(verifyHead(SECRET, sig, TARGET, now), null);
  assert.equal(verifyBody(SECRET, sig, TARGET, body), true);
  assert.equal(verifyBody(SECRET, sig, TARGET, enc.encode('{"a":2}')), false);
  assert.equal(verifyBody(SECRET, sig, TARGET, enc.encode('{"a":1} ')), false);
  assert.equal(
    verifyHead(SECRET, sig, { ...TARGET, path: "/internal/v1/other" }, now),
    "bad_mac",
  );
  assert.equal(
    verifyHead(SECRET, sig, { ...TARGET, node: "node-b" }, now),
    "other_node",
  );
  // The node id in the header is covered by the MAC: rewriting it does not help.
  const moved = parseSignature(header.replace("n=node-a", "n=node-b"))!;
  assert.equal(
    verifyHead(SECRET, moved, { ...TARGET, node: "node-b" }, now),
    "bad_mac",
  );
  // So is the length.
  const longer = parseSignature(header.replace(/,l=\d+,/, ",l=9999,"))!;
  assert.equal(verifyHead(SECRET, longer, TARGET, now), "bad_mac");
  assert.equal(
    verifyHead(enc.encode("x".repeat(40)), sig, TARGET, now),
    "bad_mac",
  );
  assert.equal(verifyHead(SECRET, sig, TARGET, now + MAX_SKEW_MS + 1), "stale");
  assert.equal(verifyHead(SECRET, sig, TARGET, now - MAX_SKEW_MS - 1), "stale");
  assert.equal(parseSignature(null), null);
  assert.equal(parseSignature(header.replace("v1=", "v2=")), null);
  assert.equal(parseSignature(`t=${now},v1=${"0".repeat(64)}`), null);
  // During a rotation both the new and the previous secret verify; nothing else does.
  const previous = enc.encode("p".repeat(40));
  const rotating = [enc.encode("n".repeat(40)), previous];
  const byPrevious = parseSignature(signCall(previous, TARGET, body, now))!;
  assert.equal(verifyHead(rotating, byPrevious, TARGET, now), null);
  assert.equal(verifyBody(rotating, byPrevious, TARGET, body), true);
  assert.equal(verifyHead(rotating, sig, TARGET, now), "bad_mac");
});

Deno.test("POST /internal/v1/sessions: 404 off a media node; 401 unsigned, mis-signed or replayed; 400 malformed; 201 once", async () => {
  const topo = await startTopology([{}]);
  const node = topo.nodes[0];
  const post = (base: string, body: Uint8Array<ArrayBuffer>, header?: string) =>
    fetch(base + HANDOFF_PATH, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(header ? { [SIGNATURE_HEADER]: header } : {}),
      },
      body,
    });
  const sign = (body: Uint8Array, secret = SECRET) =>
    signCall(secret, targetOf(node), body, Date.now());
  try {
    const handoff = enc.encode(JSON.stringify({
      session_id: "session:01M83AHJ0NN1B3HBT5F5PWK4W3",
      tenant_id: "acme",
      body: engineBody(topo.engine),
    }));
    const onControl = await post(topo.control.base, handoff, sign(handoff));
    assert.equal(onControl.status, 404);
    assert.equal((await onControl.json()).code, "AVTR_NOT_FOUND");
    for (
      const header of [undefined, sign(handoff, enc.encode("y".repeat(40)))]
    ) {
      const res = await post(node.base, handoff, header);
      assert.equal(res.status, 401);
      assert.equal((await res.json()).code, "AVTR_AUTH_INVALID_KEY");
    }
    const junk = enc.encode('{"session_id":"nope"}');
    const malformed = await post(node.base, junk, sign(junk));
    assert.equal(malformed.status, 400);
    assert.equal((await malformed.json()).code, "AVTR_REQUEST_INVALID");
    const header = sign(handoff);
    const ok = await post(node.base, handoff, header);
    assert.equal(ok.status, 201);
    assert.deepEqual(await ok.json(), {
      session_id: "session:01M83AHJ0NN1B3HBT5F5PWK4W3",
    });
    assert.equal(
      await topo.ownerOf("session:01M83AHJ0NN1B3HBT5F5PWK4W3"),
      node,
    );
    const replay = await post(node.base, handoff, header);
    assert.equal(replay.status, 401, "the same signed call twice");
    await replay.body?.cancel();
  } finally {
    await topo.close();
  }
});

Deno.test("POST /internal/v1/sessions: failed signatures spend their address's window (then 429, body unread); signed calls are never counted", async () => {
  const topo = await startTopology([{ RATE_LIMIT_PER_MINUTE: "3" }]);
  const node = topo.nodes[0];
  const call = (header?: string, body = enc.encode("{}")) =>
    fetch(node.base + HANDOFF_PATH, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(header ? { [SIGNATURE_HEADER]: header } : {}),
      },
      body,
    });
  try {
    const statuses = [];
    for (let i = 0; i < 5; i++) {
      const res = await call();
      await res.body?.cancel();
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [401, 401, 401, 429, 429]);
    // Signed calls are never counted: on a node with the same limit, five pass.
    const fresh = await startTopology([{
      RATE_LIMIT_PER_MINUTE: "3",
      RENDER_MAX_SESSIONS: "16",
    }]);
    try {
      for (let i = 0; i < 5; i++) {
        const body = enc.encode(JSON.stringify({
          session_id: `session:01M83AHJ0NN1B3HBT5F5PWK4W${i}`,
          tenant_id: "acme",
          body: engineBody(fresh.engine),
        }));
        const res = await fetch(fresh.nodes[0].base + HANDOFF_PATH, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            [SIGNATURE_HEADER]: signCall(
              SECRET,
              targetOf(fresh.nodes[0]),
              body,
              Date.now(),
            ),
          },
          body,
        });
        assert.equal(res.status, 201, await res.text());
      }
    } finally {
      await fresh.close();
    }
  } finally {
    await topo.close();
  }
});
