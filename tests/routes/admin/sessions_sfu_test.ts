/** The console's session page for a webrtc_sfu session: its SFU viewer state. */
import assert from "node:assert/strict";
import { authJson, TEST_ADMIN_KEY, testApp } from "../../_helpers.ts";
import { setViewerState } from "../../../lib/sfu/mountpoints.ts";
import { moveSession } from "../../../lib/sessions.ts";
import { startTestJanus } from "../../lib/sfu/_janus.ts";
import { get, signIn } from "./_console.ts";

Deno.test("session detail shows a webrtc_sfu session's SFU viewer state", async (t) => {
  const j = await startTestJanus();
  const app = await testApp(j.env);
  try {
    const c = await signIn(app);
    const res = await app.request("/v1/sessions", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
      body: JSON.stringify({
        provider_type: "external_engine",
        provider_config: {
          external_engine: { url: "wss://engine.example/ws", auth_headers: {} },
        },
        transport: "webrtc_sfu",
      }),
    });
    assert.equal(res.status, 200);
    const id = (await res.json()).session_id as string;
    const viewer = async () => {
      const r = await get(app, c, `/admin/sessions/${encodeURIComponent(id)}`);
      assert.equal(r.status, 200);
      const html = await r.text();
      return html.match(/data-testid="sfu-viewer">([^<]*)</)?.[1];
    };
    await t.step("before any socket: no viewer", async () => {
      assert.equal(await viewer(), "no viewer connected");
    });
    await t.step("as the SFU reports it", async () => {
      await setViewerState(app.app.deps, id, "negotiating");
      assert.equal(await viewer(), "negotiating");
      await setViewerState(app.app.deps, id, "flowing");
      assert.equal(await viewer(), "receiving media");
    });
    await t.step(
      "once the session is over, the mountpoint is gone",
      async () => {
        await moveSession(app.app.deps, id, {
          from: ["created"],
          to: "failed",
          reason: "start_failed",
        });
        for (let i = 0; i < 50; i++) {
          if ((await viewer())?.startsWith("no mountpoint")) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        assert.equal(await viewer(), "no mountpoint (the session is over)");
      },
    );
  } finally {
    await app.close();
    await j.stop();
  }
});
