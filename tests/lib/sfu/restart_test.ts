/**
 * A killed service leaves no mountpoint behind: the real `main.ts` as a child process
 * with a real Janus; SIGKILL with a live webrtc_sfu session, restart on the same KV and
 * address, and the restarted instance's sweep destroys the dead one's mountpoint.
 */
import assert from "node:assert/strict";
import {
  createSession,
  ecepCreateBody,
  FUZZ_ADMIN_KEY,
  startService,
} from "../../../fuzz/_lib.ts";
import { createJanusSfu } from "../../../lib/sfu/janus.ts";
import { startTestJanus } from "./_janus.ts";

Deno.test("a killed service's mountpoints are destroyed after it restarts", async () => {
  const j = await startTestJanus();
  const sfu = createJanusSfu({
    url: j.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
  });
  const svc = await startService(j.env);
  try {
    const s = await createSession(svc, FUZZ_ADMIN_KEY, {
      ...ecepCreateBody("wss://127.0.0.1:9/engine"),
      transport: "webrtc_sfu",
    });
    assert.deepEqual((await sfu.listMountpoints()).map((m) => m.label), [
      s.session_id,
    ]);
    Deno.kill(svc.pid()!, "SIGKILL");
    while (svc.alive()) await new Promise((r) => setTimeout(r, 50));
    // Killed: nothing ran its cleanup, the mountpoint is still on Janus.
    assert.equal((await sfu.listMountpoints()).length, 1);
    await svc.ensureAlive();
    const deadline = Date.now() + 60_000;
    while ((await sfu.listMountpoints()).length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.deepEqual(await sfu.listMountpoints(), []);
  } finally {
    await svc.stop();
    await j.stop();
  }
});
