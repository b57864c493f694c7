/**
 * `Captions` (lib/media/captions.ts) against the real built-in renderer: however many
 * texts an engine sends, the texts held for their marks stay bounded, and every text
 * still goes to the browser exactly once.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import { Captions, MAX_HELD } from "../../../lib/media/captions.ts";
import type { ServerMessage } from "../../../lib/media/protocol.ts";
import { createBuiltinRenderer } from "../../../lib/render/builtin.ts";
import { ManualClock } from "../render/_helpers.ts";

Deno.test("Captions holds at most MAX_HELD texts over all turns; each text goes out once", async () => {
  const backend = createBuiltinRenderer({ log: memoryLogger(), onClose: [] }, {
    width: 128,
    height: 128,
    clock: new ManualClock(),
  });
  const render = await backend.open({
    sessionId: "session:captions",
    avatarId: "ava",
    bgId: "studio",
  });
  const sent: ServerMessage[] = [];
  const captions = new Captions({
    send: (m) => sent.push(m),
    render: () => render,
  });
  try {
    // 90 s of the first turn's audio queued, then a flood of one-letter texts, half
    // in that turn and half each in a turn of its own.
    render.pushAudio(new Int16Array(90 * 24000), 24000, "turn_1");
    const texts = 20_000;
    for (let i = 0; i < texts; i++) {
      captions.add(i % 2 ? `turn_x${i}` : "turn_1", "a", false);
      assert.ok(captions.held <= MAX_HELD, `${captions.held} held`);
    }
    assert.equal(captions.held, MAX_HELD);
    captions.finish("turn_1");
    for (let i = 1; i < texts; i += 2) captions.finish(`turn_x${i}`);
    assert.equal(captions.held, 0);
    assert.equal(sent.filter((m) => m.type === "transcript").length, texts);
  } finally {
    await render.stop({ graceful: false, timeoutMs: 5000 });
  }
});
