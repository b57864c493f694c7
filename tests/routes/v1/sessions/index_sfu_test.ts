/** POST /v1/sessions with the realtime SFU (DECISIONS 11), against a real Janus. */
import assert from "node:assert/strict";
import { sessionResponseSchema } from "../../../../lib/api/schemas.ts";
import { createJanusSfu } from "../../../../lib/sfu/janus.ts";
import { mountpointKey } from "../../../../lib/sfu/mountpoints.ts";
import { turnCredential } from "../../../../lib/sfu/ice.ts";
import { type RunningJanus, startTestJanus } from "../../../lib/sfu/_janus.ts";
import {
  assertError,
  driveTo,
  postCreate,
  sessionApp,
  validBody,
} from "./_helpers.ts";

function ourMountpoints(j: RunningJanus) {
  return createJanusSfu({ url: j.url, token: j.apiSecret, adminKey: j.apiKey })
    .listMountpoints();
}

async function until(cond: () => Promise<boolean>, what: string) {
  for (let i = 0; i < 100; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

Deno.test("POST /v1/sessions webrtc_sfu without SFU_URL → 400 AVTR_SFU_NOT_CONFIGURED; auto → websocket_fmp4", async () => {
  const app = await sessionApp();
  try {
    const body = await assertError(
      await postCreate(app, { ...validBody(), transport: "webrtc_sfu" }),
      "AVTR_SFU_NOT_CONFIGURED",
      "transport",
    );
    assert.equal(body.retry_after, undefined);
    const res = await postCreate(app, { ...validBody(), transport: "auto" });
    const ok = sessionResponseSchema.parse(await res.json());
    assert.equal(ok.transport, "websocket_fmp4");
    assert.equal(ok.stream_metadata.sfu_endpoint, null);
  } finally {
    await app.close();
  }
});

Deno.test("POST /v1/sessions webrtc_sfu makes a private mountpoint per session; a terminal move destroys it", async (t) => {
  const j = await startTestJanus();
  const app = await sessionApp({
    ...j.env,
    ICE_SERVERS: JSON.stringify([
      { urls: "stun:stun.example.com:3478" },
      { urls: ["turn:turn.example.com:3478?transport=udp"] },
    ]),
    TURN_SECRET: "coturn-static-auth-secret",
    PUBLIC_URL: "https://avatar.example.com",
  });
  try {
    let id = "";
    await t.step(
      "create → webrtc_sfu with sfu_endpoint and ice_servers",
      async () => {
        const res = await postCreate(app, {
          ...validBody(),
          transport: "webrtc_sfu",
        });
        assert.equal(res.status, 200);
        const body = sessionResponseSchema.parse(await res.json());
        id = body.session_id;
        assert.equal(body.transport, "webrtc_sfu");
        assert.equal(
          body.stream_metadata.sfu_endpoint,
          `wss://avatar.example.com/v1/sessions/${encodeURIComponent(id)}/ws`,
        );
        const [stun, turn] = body.stream_metadata.ice_servers;
        assert.deepEqual(stun, { urls: "stun:stun.example.com:3478" });
        const [expiry, user] = turn.username!.split(":");
        assert.equal(
          user + ":" + turn.username!.split(":").slice(2).join(":"),
          id,
        );
        assert.ok(Number(expiry) > Date.now() / 1000 + 3600);
        assert.equal(
          turn.credential,
          turnCredential("coturn-static-auth-secret", Number(expiry), id)
            .credential,
        );
        // Nothing of Janus reaches the client.
        const text = JSON.stringify(body);
        for (const secret of [j.apiSecret, j.apiKey, j.url]) {
          assert.ok(!text.includes(secret));
        }
      },
    );
    await t.step(
      "the mountpoint is on Janus and recorded in KV with its holder",
      async () => {
        assert.deepEqual((await ourMountpoints(j)).map((m) => m.label), [id]);
        const rec = await app.app.deps.kv.get<Record<string, unknown>>(
          mountpointKey(id),
        );
        assert.equal(rec.value?.holder, app.app.deps.instanceId);
        assert.equal(typeof rec.value?.mountpoint_id, "number");
        assert.ok(!JSON.stringify(rec.value).includes(j.apiKey));
      },
    );
    await t.step("auto with Janus up → webrtc_sfu", async () => {
      const res = await postCreate(app, { ...validBody(), transport: "auto" });
      const body = sessionResponseSchema.parse(await res.json());
      assert.equal(body.transport, "webrtc_sfu");
      assert.equal((await ourMountpoints(j)).length, 2);
      await driveTo(app.app.deps, body.session_id, "failed");
    });
    await t.step(
      "ending the session destroys its mountpoint and record",
      async () => {
        await driveTo(app.app.deps, id, "ended");
        await until(
          async () => (await ourMountpoints(j)).length === 0,
          "no mountpoint",
        );
        await until(
          async () =>
            (await app.app.deps.kv.get(mountpointKey(id))).value === null,
          "no record",
        );
      },
    );
    await t.step("/readyz reports the SFU", async () => {
      const res = await app.request("/readyz");
      assert.equal(res.status, 200);
      assert.equal((await res.json()).checks.sfu, "ok");
    });
  } finally {
    await app.close();
    await j.stop();
  }
});

Deno.test("POST /v1/sessions with Janus refusing or stopped: AVTR_SFU_* codes, never a silent fall back", async (t) => {
  const j = await startTestJanus({ ingestPortRange: "22950-22953" });
  try {
    await t.step(
      "a wrong admin_key → 502 AVTR_SFU_NEGOTIATION_FAILED",
      async () => {
        const app = await sessionApp({ ...j.env, SFU_API_KEY: "wrong-key" });
        try {
          const body = await assertError(
            await postCreate(app, { ...validBody(), transport: "webrtc_sfu" }),
            "AVTR_SFU_NEGOTIATION_FAILED",
          );
          assert.equal(body.retry_after, 5);
        } finally {
          await app.close();
        }
      },
    );
    await t.step("no ingest port left → 503 AVTR_SFU_ROOM_FULL", async () => {
      const app = await sessionApp(j.env);
      try {
        const first = await postCreate(app, {
          ...validBody(),
          transport: "webrtc_sfu",
        });
        assert.equal(first.status, 200);
        await first.body?.cancel();
        const body = await assertError(
          await postCreate(app, { ...validBody(), transport: "webrtc_sfu" }),
          "AVTR_SFU_ROOM_FULL",
        );
        assert.equal(body.retry_after, 15);
        assert.equal((await ourMountpoints(j)).length, 1);
        await assertError(
          await postCreate(app, { ...validBody(), transport: "webrtc_sfu" }),
          "AVTR_SFU_ROOM_FULL",
        );
      } finally {
        await app.close();
      }
    });
    await j.stop();
    await t.step(
      "Janus stopped → 502 AVTR_SFU_CONNECTION_FAILED with retry_after; auto → websocket_fmp4",
      async () => {
        const app = await sessionApp(j.env);
        try {
          const body = await assertError(
            await postCreate(app, { ...validBody(), transport: "webrtc_sfu" }),
            "AVTR_SFU_CONNECTION_FAILED",
          );
          assert.equal(body.retry_after, 5);
          const res = await postCreate(app, {
            ...validBody(),
            transport: "auto",
          });
          const ok = sessionResponseSchema.parse(await res.json());
          assert.equal(ok.transport, "websocket_fmp4");
          const ready = await app.request("/readyz");
          assert.equal(ready.status, 200);
          assert.equal((await ready.json()).checks.sfu, "failing");
        } finally {
          await app.close();
        }
      },
    );
  } finally {
    await j.stop();
  }
});

Deno.test("POST /v1/sessions with a render worker: webrtc_sfu → 400 AVTR_SFU_NOT_CONFIGURED, auto → websocket_fmp4", async () => {
  const j = await startTestJanus();
  const app = await sessionApp({
    ...j.env,
    RENDER_WORKER_URL: "http://127.0.0.1:9",
    RENDER_WORKER_TOKEN: "render-worker-token-0123456789",
  });
  try {
    await assertError(
      await postCreate(app, { ...validBody(), transport: "webrtc_sfu" }),
      "AVTR_SFU_NOT_CONFIGURED",
      "transport",
    );
    const res = await postCreate(app, { ...validBody(), transport: "auto" });
    const ok = sessionResponseSchema.parse(await res.json());
    assert.equal(ok.transport, "websocket_fmp4");
    assert.deepEqual(await ourMountpoints(j), []);
  } finally {
    await app.close();
    await j.stop();
  }
});
