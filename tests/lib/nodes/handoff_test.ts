/**
 * The control plane hands creates to media nodes (lib/nodes/): the session and its
 * credentials land on a node with a free slot, never in the control plane's memory, KV
 * or log; full or unreachable nodes are skipped; a node's refusal is the create's answer
 * and frees the `Idempotency-Key`; the media socket and the end call go through the
 * control plane to the node.
 */
import assert from "node:assert/strict";
import { TEST_ADMIN_KEY } from "../../_helpers.ts";
import {
  Browser,
  connectActive,
  ENGINE_KEY,
  type LiveStack,
} from "../media/_live.ts";
import { TAKEOVER_BURST } from "../../../lib/media/admission.ts";
import { engineBody, NODE_SECRET, startTopology } from "./_topology.ts";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import { deploymentHasSfu } from "../../../lib/nodes/registry.ts";
import { instanceStaleMs } from "../../../lib/media/presence.ts";
import { ApiError } from "../../../lib/errors.ts";
import { parseCreateSession } from "../../../lib/api/schemas.ts";
import { OPERATOR } from "../../../lib/principal.ts";
import { PHOTO_OWN_BG } from "../../../lib/avatars.ts";
import { addPhotoAvatar } from "../../../lib/photo/mod.ts";
import { startSession } from "../../../lib/sessions/create.ts";

Deno.test("a create on the control plane runs on the media node with most free slots; the control plane holds no credential", async () => {
  const topo = await startTopology([
    { RENDER_MAX_SESSIONS: "1" },
    { RENDER_MAX_SESSIONS: "4" },
  ]);
  try {
    const res = await topo.create();
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.status, "created");
    // The media socket URL is the control plane's: the browser never addresses a node.
    const owner = await topo.ownerOf(body.session_id);
    assert.equal(owner, topo.nodes[1]);
    assert.ok(owner.app.deps.vault.has(body.session_id));
    assert.equal(topo.control.app.deps.vault.size, 0);
    assert.equal(topo.nodes[0].app.deps.vault.size, 0);
    assert.ok(owner.app.deps.renderSlots.has(body.session_id));
    // Neither the control plane's log nor KV ever saw the engine credential.
    assert.ok(!topo.control.log.lines.join("\n").includes(ENGINE_KEY));
    for await (const e of topo.kv.list({ prefix: [] })) {
      const text = JSON.stringify(
        e.value ?? null,
        (_, v) => typeof v === "bigint" ? String(v) : v,
      );
      assert.ok(!text.includes(ENGINE_KEY));
    }
  } finally {
    await topo.close();
  }
});

Deno.test("a full node is skipped for the next; with every node full the create is 503 AVTR_RENDER_CAPACITY", async () => {
  const topo = await startTopology([
    { RENDER_MAX_SESSIONS: "1" },
    { RENDER_MAX_SESSIONS: "1" },
  ]);
  try {
    // The registry's free counts are from the last heartbeat: both still say 1 free.
    const owners = new Set();
    for (let i = 0; i < 2; i++) {
      const res = await topo.create();
      assert.equal(res.status, 200);
      owners.add(await topo.ownerOf((await res.json()).session_id));
    }
    assert.equal(owners.size, 2, "one session on each node");
    const full = await topo.create();
    assert.equal(full.status, 503);
    const err = await full.json();
    assert.equal(err.code, "AVTR_RENDER_CAPACITY");
    assert.ok(err.retry_after >= 1);
  } finally {
    await topo.close();
  }
});

Deno.test("without a live media node the create is 503; an unreachable node is skipped", async () => {
  const slots = { RENDER_MAX_SESSIONS: "8" };
  const topo = await startTopology([slots, slots]);
  try {
    // One node's server goes away; its record is still fresh.
    await topo.nodes[0].server.shutdown();
    for (let i = 0; i < 3; i++) {
      const res = await topo.create();
      assert.equal(res.status, 200);
      const owner = await topo.ownerOf((await res.json()).session_id);
      assert.equal(owner, topo.nodes[1]);
    }
    await topo.nodes[1].server.shutdown();
    const none = await topo.create();
    assert.equal(none.status, 503);
    assert.equal((await none.json()).code, "AVTR_RENDER_CAPACITY");
  } finally {
    await topo.close().catch(() => {});
  }
});

Deno.test("a node's refusal is the create's answer, param included, and frees the Idempotency-Key", async () => {
  const topo = await startTopology([{}]);
  try {
    const key = { "idempotency-key": "order-7" };
    // The node has no SFU: it refuses webrtc_sfu.
    const refused = await topo.create(
      engineBody(topo.engine, { transport: "webrtc_sfu" }),
      key,
    );
    assert.equal(refused.status, 400);
    const err = await refused.json();
    assert.equal(err.code, "AVTR_SFU_NOT_CONFIGURED");
    assert.equal(err.param, "transport");
    // The key was released: another body under it is a fresh create, not a 422.
    const first = await topo.create(engineBody(topo.engine), key);
    assert.equal(first.status, 200);
    const again = await topo.create(engineBody(topo.engine), key);
    assert.equal(again.status, 200);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(
      (await again.json()).session_id,
      (await first.json()).session_id,
    );
  } finally {
    await topo.close();
  }
});

Deno.test("the media socket and the end call on the control plane reach the node holding the session", async () => {
  const topo = await startTopology([{}]);
  try {
    const created = await (await topo.create()).json();
    const browser = await connectActive(
      topo.control,
      created.session_id,
      created.client_token,
      2,
    );
    const end = await fetch(
      `${topo.control.base}/v1/sessions/${created.session_id}/end`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      },
    );
    assert.equal(end.status, 200);
    const ended = await end.json();
    assert.equal(ended.status, "ended");
    assert.ok(ended.chunks_rendered >= 2, "the node reported its segments");
    await browser.message(
      (m) => m.type === "session.ended",
      "session.ended through the relay",
    );
    await browser.closed();
    assert.equal(topo.nodes[0].app.deps.vault.size, 0, "credentials zeroed");
  } finally {
    await topo.close();
  }
});

Deno.test("deploymentHasSfu(): on a control plane, whether a live media node has an SFU", async () => {
  const topo = await startTopology([{}]);
  try {
    const deps = topo.control.app.deps;
    assert.equal(await deploymentHasSfu(deps), false);
    const record = {
      started_at: deps.now(),
      heartbeat_at: deps.now(),
      url: "http://127.0.0.1:9",
      role: "media",
      render: { free: 1, max: 1 },
      sfu: true,
    };
    await topo.kv.set(["instances", "node-with-janus"], record);
    assert.equal(await deploymentHasSfu(deps), true);
    // A silent node counts for nothing.
    await topo.kv.set(["instances", "node-with-janus"], {
      ...record,
      heartbeat_at: deps.now() - instanceStaleMs(deps.config),
    });
    assert.equal(await deploymentHasSfu(deps), false);
  } finally {
    await topo.close();
  }
});

Deno.test("a socket the holder refuses for now (past the takeover rate) is closed 1013 through the relay, so the client retries; it is not told the session is over", async () => {
  const topo = await startTopology([{}]);
  const sockets: Browser[] = [];
  try {
    const created = await (await topo.create()).json();
    sockets.push(
      await connectActive(
        topo.control,
        created.session_id,
        created.client_token,
      ),
    );
    // Takeovers until the holder's bucket refuses one (429 before its upgrade).
    let refused: Browser | undefined;
    for (let i = 0; i <= TAKEOVER_BURST + 1 && !refused; i++) {
      const b = Browser.connect(
        topo.control as unknown as LiveStack,
        created.session_id,
        created.client_token,
      );
      sockets.push(b);
      await b.opened;
      await b.until(
        () =>
          b.closeCode !== null ||
          b.json.some((m) => m.type === "session.state"),
        "a state or a close",
      );
      if (b.closeCode !== null) refused = b;
    }
    assert.ok(refused, "the holder refused a takeover");
    assert.equal(refused.closeCode, 1013);
    assert.deepEqual(refused.json, [], "no invalid_session, nothing at all");
    const st = await (await fetch(
      `${topo.control.base}/v1/sessions/${created.session_id}`,
      { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } },
    )).json();
    assert.equal(st.status, "active");
  } finally {
    for (const b of sockets) b.close();
    await topo.close();
  }
});

Deno.test("a control plane drives no SFU, even with SFU_URL set: its media nodes do", async () => {
  const env = {
    KV_PATH: ":memory:",
    NODE_SECRET,
    SFU_URL: "http://127.0.0.1:8088/janus",
    SFU_API_SECRET: "token",
    SFU_API_KEY: "key",
  };
  const control = await createDeps({
    env: { ...env, SERVICE_ROLE: "control" },
  });
  const media = await createDeps({ env: { ...env, SERVICE_ROLE: "media" } });
  try {
    assert.equal(control.sfu, null);
    assert.notEqual(media.sfu, null);
  } finally {
    await closeDeps(control);
    await closeDeps(media);
  }
});

Deno.test("a photo avatar is checked on the control plane and again on the node it lands on", async () => {
  const topo = await startTopology([{ RENDER_MAX_SESSIONS: "2" }]);
  try {
    const deps = topo.control.app.deps;
    const photo = await addPhotoAvatar(deps, OPERATOR, {
      tenantId: "admin",
      name: "Grace",
      bytes: Deno.readFileSync(
        new URL("../../fixtures/photo/grace_hopper.jpg", import.meta.url),
      ),
      consentBy: "test",
    });
    const res = await topo.create(
      engineBody(topo.engine, { avatar_config: { avatar_id: photo.avatarId } }),
    );
    assert.equal(res.status, 200);
    const id = (await res.json()).session_id;
    assert.equal(await topo.ownerOf(id), topo.nodes[0]);
    const rec = await topo.kv.get<{ avatar_id: string; bg_id: string }>([
      "sessions",
      id,
    ]);
    assert.deepEqual([rec.value?.avatar_id, rec.value?.bg_id], [
      photo.avatarId,
      PHOTO_OWN_BG,
    ]);

    const missing = "ph_01JZZZZZZZZZZZZZZZZZZZZZZZ";
    const refused = await topo.create(
      engineBody(topo.engine, { avatar_config: { avatar_id: missing } }),
    );
    assert.equal(refused.status, 400);
    assert.equal((await refused.json()).param, "avatar_config.avatar_id");
    // The node does not take the control plane's word for it (the avatar may be gone).
    await assert.rejects(
      startSession(topo.nodes[0].app.deps, {
        tenantId: "admin",
        sessionId: "session:01JZZZZZZZZZZZZZZZZZZZZZZZ",
        input: parseCreateSession(
          engineBody(topo.engine, { avatar_config: { avatar_id: missing } }),
        ),
      }),
      (e) => e instanceof ApiError && e.code === "AVTR_RENDER_MISCONFIGURED",
    );
  } finally {
    await topo.close();
  }
});

Deno.test("a portrait photo session goes to a node with four render slots free; a node with fewer refuses it and the next takes it", async () => {
  const topo = await startTopology([
    { RENDER_MAX_SESSIONS: "5" },
    { RENDER_MAX_SESSIONS: "4" },
  ]);
  try {
    const [busy, roomy] = topo.nodes;
    // Two square sessions land on the node with most free slots: 3 left there.
    for (let i = 0; i < 2; i++) {
      const res = await topo.create();
      assert.equal(res.status, 200);
      assert.equal(await topo.ownerOf((await res.json()).session_id), busy);
    }
    assert.equal(busy.app.deps.renderSlots.inUse, 2);
    const portrait = await addPhotoAvatar(topo.control.app.deps, OPERATOR, {
      tenantId: "admin",
      name: "Grace",
      bytes: Deno.readFileSync(
        new URL("../../fixtures/photo/grace_hopper.jpg", import.meta.url),
      ),
      consentBy: "test",
      framing: "portrait",
    });
    // The registry still says 5 free on the busy node: it is tried first, refuses.
    const res = await topo.create(
      engineBody(topo.engine, {
        avatar_config: { avatar_id: portrait.avatarId },
      }),
    );
    assert.equal(res.status, 200);
    const id = (await res.json()).session_id;
    assert.equal(await topo.ownerOf(id), roomy);
    assert.equal(roomy.app.deps.renderSlots.inUse, 4);
    assert.equal(busy.app.deps.renderSlots.inUse, 2);
  } finally {
    await topo.close();
  }
});
