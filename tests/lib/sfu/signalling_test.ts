import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import type { ServerMessage } from "../../../lib/media/protocol.ts";
import { createJanusSfu } from "../../../lib/sfu/janus.ts";
import { SfuLink } from "../../../lib/sfu/signalling.ts";
import { janusSessions, type RunningJanus, startTestJanus } from "./_janus.ts";

Deno.test("SfuLink sends the SFU's offer first, its trickled candidates after it, and closes the viewer with the socket", async () => {
  const j = await startTestJanus();
  const sfu = createJanusSfu({
    url: j.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
  });
  try {
    const mp = await sfu.createMountpoint("session:SIG");
    const sent: ServerMessage[] = [];
    const failed: string[] = [];
    const link = new SfuLink(sfu, mp, memoryLogger(), "session:SIG", {
      send: (_ws, msg) => sent.push(msg),
      onFlowing: () => {},
      onViewerFailed: (r) => failed.push(r),
    });
    const ws = {} as WebSocket;
    link.attach(ws);
    for (let i = 0; i < 100; i++) {
      if (sent.some((m) => m.type === "webrtc.candidate")) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(sent[0]?.type, "webrtc.offer");
    assert.ok(
      sent.slice(1).length > 0 &&
        sent.slice(1).every((m) => m.type === "webrtc.candidate"),
      JSON.stringify(sent.map((m) => m.type)),
    );
    assert.deepEqual(failed, []);
    link.detach(ws);
    for (let i = 0; i < 50; i++) {
      if ((await viewers(j)) === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(await viewers(j), 0);
    await link.close();
  } finally {
    await j.stop();
  }
});

/** Janus sessions alive (each viewer has its own). */
async function viewers(j: RunningJanus): Promise<number> {
  return (await janusSessions(j)).length;
}
