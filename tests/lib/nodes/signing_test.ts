/**
 * The handoff call's authentication (lib/nodes/signing.ts, lib/nodes/accept.ts): only a
 * media node answers `POST /internal/v1/sessions`; it takes a call signed with
 * `NODE_SECRET` over its exact bytes within 30 s of its clock, once.
 */
import assert from "node:assert/strict";
import {
  MAX_SKEW_MS,
  ReplayGuard,
  SIGNATURE_HEADER,
  signCall,
  verifyCall,
} from "../../../lib/nodes/signing.ts";
import { HANDOFF_PATH } from "../../../lib/nodes/handoff.ts";
import { engineBody, NODE_SECRET, startTopology } from "./_topology.ts";

const enc = new TextEncoder();
const SECRET = enc.encode(NODE_SECRET);

Deno.test("verifyCall() takes its own signature once, and refuses any change, another secret or a stale time", () => {
  const now = Date.now();
  const body = enc.encode('{"a":1}');
  const sig = signCall(SECRET, "POST", HANDOFF_PATH, body, now);
  const check = (
    header: string | null,
    opts: {
      body?: Uint8Array;
      path?: string;
      at?: number;
      secret?: Uint8Array;
    } = {},
  ) =>
    verifyCall(
      opts.secret ?? SECRET,
      header,
      "POST",
      opts.path ?? HANDOFF_PATH,
      opts.body ?? body,
      opts.at ?? now,
      new ReplayGuard(),
    );
  assert.equal(check(sig), true);
  assert.equal(check(sig, { body: enc.encode('{"a":2}') }), false);
  assert.equal(check(sig, { path: "/internal/v1/other" }), false);
  assert.equal(check(sig, { secret: enc.encode("x".repeat(40)) }), false);
  assert.equal(check(sig, { at: now + MAX_SKEW_MS + 1 }), false);
  assert.equal(check(sig, { at: now - MAX_SKEW_MS - 1 }), false);
  assert.equal(check(null), false);
  assert.equal(check(sig.replace("v1=", "v2=")), false);
  assert.equal(check(`t=${now},v1=${"0".repeat(64)}`), false);
  // During a rotation both the new and the previous secret verify; nothing else does.
  const previous = enc.encode("p".repeat(40));
  const rotating = [enc.encode("n".repeat(40)), previous];
  const byPrevious = signCall(previous, "POST", HANDOFF_PATH, body, now);
  assert.equal(check(byPrevious, { secret: previous }), true);
  assert.equal(
    verifyCall(
      rotating,
      byPrevious,
      "POST",
      HANDOFF_PATH,
      body,
      now,
      new ReplayGuard(),
    ),
    true,
  );
  assert.equal(
    verifyCall(
      rotating,
      sig,
      "POST",
      HANDOFF_PATH,
      body,
      now,
      new ReplayGuard(),
    ),
    false,
  );
  const guard = new ReplayGuard();
  const args = ["POST", HANDOFF_PATH, body, now, guard] as const;
  assert.equal(verifyCall(SECRET, sig, ...args), true);
  assert.equal(verifyCall(SECRET, sig, ...args), false, "a replay");
});

Deno.test("ReplayGuard stays bounded and forgets signatures past their window", () => {
  const guard = new ReplayGuard(3);
  for (let i = 0; i < 10; i++) assert.ok(guard.first(`s${i}`, 1_000 + i, 0));
  assert.equal(guard.first("s9", 2_000, 0), false);
  // Expired entries go: the same signature is new again after its window.
  assert.equal(guard.first("s9", 5_000, 3_000), true);
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
    signCall(secret, "POST", HANDOFF_PATH, body, Date.now());
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
              "POST",
              HANDOFF_PATH,
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
