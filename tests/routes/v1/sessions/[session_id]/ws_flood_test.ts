/**
 * The media socket against a browser that floods it (issue 29): every frame's bytes are
 * counted as it arrives, and a socket past the byte bound is closed with 1008 before
 * more of it is read; a fast burst under the bound is served.
 */
import assert from "node:assert/strict";
import { TestClock } from "../../../../_helpers.ts";
import {
  connectActive,
  createSession,
  flood,
  statusOf,
  withLiveStack,
} from "../../../../lib/media/_live.ts";
import { INBOUND_BURST_BYTES } from "../../../../../lib/media/gate.ts";
import {
  CLOSE_FLOODING,
  MAX_FRAME_BYTES,
} from "../../../../../lib/media/protocol.ts";
import { mediaHubOf } from "../../../../../lib/media/service.ts";

const FRAME = new Uint8Array(MAX_FRAME_BYTES);

/** A clock that stands still: the byte bound never refills, so it is exact. */
const still = () => ({ clock: new TestClock(Date.now()) });

Deno.test("a socket is closed with 1008 at the first frame past INBOUND_BURST_BYTES; the session lives on", async () => {
  await withLiveStack(async (s) => {
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token);
    const live = mediaHubOf(s.t.app.deps).live.get(c.session_id)!;
    const before = live.stats.framesReceived;
    await flood(b, FRAME, INBOUND_BURST_BYTES + MAX_FRAME_BYTES);
    assert.equal(await b.closed(), CLOSE_FLOODING);
    const used = live.stats.framesReceived - before;
    assert.equal(used * MAX_FRAME_BYTES, INBOUND_BURST_BYTES);
    assert.equal((await statusOf(s, c.session_id)).status, "active");
    assert.ok(
      s.t.log.lines.some((l) => l.includes("closed for sending too fast")),
    );
  }, { ...still(), noFfmpegLeft: true });
});

Deno.test("a 64-MiB flood of 64-KiB frames is used no further than INBOUND_BURST_BYTES, and its socket closes", async () => {
  await withLiveStack(async (s) => {
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token);
    const live = mediaHubOf(s.t.app.deps).live.get(c.session_id)!;
    const before = live.stats.framesReceived;
    const max = 64 * 1024 * 1024;
    const sent = await flood(b, FRAME, max);
    await b.closed();
    const used = (live.stats.framesReceived - before) * MAX_FRAME_BYTES;
    assert.ok(used <= INBOUND_BURST_BYTES, `${used} bytes used`);
    assert.ok(sent < max, "the socket closed under the browser");
  }, { ...still(), noFfmpegLeft: true });
});

Deno.test("a fast burst under the byte bound (a reconnect's catch-up) keeps its socket", async () => {
  await withLiveStack(async (s) => {
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token);
    b.send({ type: "audio.config", sample_rate: 48000 });
    // 4 MiB at once: far more than the browser client ever queues (256 KiB).
    await flood(b, new Uint8Array(9600), 4 * 1024 * 1024);
    b.send({ type: "ping" });
    await b.message((m) => m.type === "pong", "pong");
    assert.equal(b.closeCode, null);
    b.close();
  }, { ...still(), noFfmpegLeft: true });
});
