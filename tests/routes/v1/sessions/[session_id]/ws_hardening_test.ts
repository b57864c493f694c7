/**
 * The media socket against an abusive browser (issue 11, findings 2, 5 and 6): frames
 * over 64 KiB, takeover loops, render capacity held by unconnected sessions or by an
 * upgrade whose client left mid-handshake (issue 29).
 */
import assert from "node:assert/strict";
import { TestClock } from "../../../../_helpers.ts";
import {
  abandonedUpgrade,
  Browser,
  connectActive,
  createSession,
  holdingServer,
  type LiveStack,
  statusOf,
  withLiveStack,
} from "../../../../lib/media/_live.ts";
import { tenantKey } from "../_helpers.ts";
import { liveEncoderPids } from "../../../../../lib/render/encoder.ts";
import {
  parseFragment,
  parseInit,
} from "../../../../../lib/render/mp4_parse.ts";
import { TAKEOVER_BURST } from "../../../../../lib/media/admission.ts";
import { mediaHubOf } from "../../../../../lib/media/service.ts";
import { SOCKET_OPEN_TIMEOUT_MS } from "../../../../../lib/media/contain.ts";
import { readSession } from "../../../../../lib/sessions.ts";

const UPGRADE = {
  upgrade: "websocket",
  connection: "Upgrade",
  "sec-websocket-version": "13",
  "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
};

/** An upgrade request through the app's handler: the answer before any upgrade. */
async function upgradeAnswer(
  s: LiveStack,
  id: string,
  token: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await s.t.request(
    `/v1/sessions/${encodeURIComponent(id)}/ws?token=${
      encodeURIComponent(token)
    }`,
    { headers: UPGRADE },
  );
  return { status: res.status, body: await res.json() };
}

/** The first fragment of a socket: video starts on a keyframe near 0. */
function assertStartsFresh(b: Browser): void {
  const info = parseInit(b.binary[0]);
  const defaults = new Map(
    info.tracks.map((t) => [t.trackId, t.defaultSampleFlags]),
  );
  const first = parseFragment(b.binary[1], defaults);
  for (const t of first.tracks) {
    const scale = info.tracks.find((x) => x.trackId === t.trackId)!.timescale;
    assert.ok(
      t.baseDecodeTime / scale < 0.05,
      `track ${t.trackId} starts near 0: ${t.baseDecodeTime}/${scale}`,
    );
  }
  const video = info.tracks.find((t) => t.kind === "video")!;
  assert.equal(
    first.tracks.find((t) => t.trackId === video.trackId)!.firstSampleSync,
    true,
  );
}

Deno.test("a takeover loop reuses the session's encoder; past the burst, 429 before the upgrade", async () => {
  await withLiveStack(async (s) => {
    const c = await createSession(s);
    const others = new Set(liveEncoderPids());
    const before = others.size;
    let b = await connectActive(s, c.session_id, c.client_token, 2);
    assertStartsFresh(b);
    const pid = liveEncoderPids().find((p) => !others.has(p))!;
    assert.equal(liveEncoderPids().length, before + 1);
    for (let i = 0; i < TAKEOVER_BURST; i++) {
      const next = Browser.connect(
        s,
        c.session_id,
        c.stream_metadata.session_token,
      );
      await next.opened;
      await next.until(() => next.binary.length >= 2, "init + a fragment");
      assert.equal(await b.closed(), 4000);
      assertStartsFresh(next);
      assert.equal(liveEncoderPids().length, before + 1, "one encoder");
      assert.ok(liveEncoderPids().includes(pid), "the same encoder");
      b = next;
    }
    const refused = await upgradeAnswer(
      s,
      c.session_id,
      c.stream_metadata.session_token,
    );
    assert.equal(refused.status, 429);
    assert.equal(refused.body.code, "AVTR_RATE_LIMIT_EXCEEDED");
    assert.ok((refused.body.retry_after as number) >= 1);
    const text = (await s.t.app.deps.metrics.expose()).body;
    assert.match(text, /avatar_rate_limited_total\{kind="reconnect"\} 1/);
    assert.match(
      text,
      new RegExp(`^avatar_media_takeovers_total ${TAKEOVER_BURST}$`, "m"),
    );
    // Its one start (the takeovers start nothing) in the start histograms.
    assert.match(
      text,
      /avatar_engine_connect_seconds_count\{provider="[a-z_]+",result="ok"\} 1/,
    );
    assert.match(
      text,
      /avatar_session_activation_seconds_count\{transport="websocket_fmp4"\} 1/,
    );
    assert.equal(b.closeCode, null, "the current socket is untouched");
    assert.equal((await statusOf(s, c.session_id)).status, "active");
    b.close();
  }, { noFfmpegLeft: true });
});

Deno.test("frames over 64 KiB are refused with invalid_message; the third closes the socket with 1009", async () => {
  await withLiveStack(async (s) => {
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token, 2);
    b.send(new Uint8Array(64 * 1024 + 2));
    b.send(JSON.stringify({ type: "text", text: "x".repeat(70_000) }));
    await b.until(
      () =>
        b.json.filter((m) => m.type === "error" && m.code === "invalid_message")
          .length === 2,
      "two invalid_message",
    );
    const peer = await s.engine.peer();
    assert.ok(
      !peer.json.some((m) => m.type === "user.text"),
      "the text never reached the engine",
    );
    assert.equal(b.closeCode, null);
    b.send(new Uint8Array(1024 * 1024));
    assert.equal(await b.closed(), 1009);
    assert.equal((await statusOf(s, c.session_id)).status, "active");
  }, { noFfmpegLeft: true });
});

Deno.test("a socket whose render reservation lapsed takes a slot when it opens, or gets 503 before the upgrade", async () => {
  const clock = new TestClock(Date.now());
  await withLiveStack(async (s) => {
    const deps = s.t.app.deps;
    const c = await createSession(s);
    clock.advance(30_000); // no socket within RENDER_RESERVATION_S: the lease lapses
    assert.equal(deps.renderSlots.inUse, 0);
    // Two other tenants take both slots.
    for (const tenant of ["t2", "t3"]) {
      const api_key = await tenantKey(deps, tenant, ["sessions:write"]);
      const res = await s.t.request("/v1/sessions", {
        method: "POST",
        headers: {
          authorization: `Bearer ${api_key}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({
          provider_type: "vendor_b",
          provider_config: {
            vendor_b: { access_token: "tok", agent_id: "agent_1" },
          },
        }),
      });
      assert.equal(res.status, 200, await res.text());
    }
    const full = await upgradeAnswer(s, c.session_id, c.client_token);
    assert.equal(full.status, 503);
    assert.equal(full.body.code, "AVTR_RENDER_CAPACITY");
    assert.ok((full.body.retry_after as number) >= 1);
    assert.match(
      (await deps.metrics.expose()).body,
      /avatar_rate_limited_total\{kind="render_capacity"\} 1/,
    );
    assert.equal((await statusOf(s, c.session_id)).status, "created");
    clock.advance(30_000); // the others' leases lapse too
    const b = await connectActive(s, c.session_id, c.client_token, 2);
    assert.equal(deps.renderSlots.has(c.session_id), true);
    clock.advance(60_000);
    assert.equal(deps.renderSlots.has(c.session_id), true, "held while live");
    b.close();
  }, { clock, env: { RENDER_MAX_SESSIONS: "2" }, noFfmpegLeft: true });
});

Deno.test("a socket admitted but never opened gives its render slot back; the session stays created", async () => {
  const clock = new TestClock(Date.now());
  await withLiveStack(async (s) => {
    const deps = s.t.app.deps;
    const c = await createSession(s);
    const session = (await readSession(deps, c.session_id))!;
    const hub = mediaHubOf(deps);
    hub.admitSocket(session); // the lease becomes a hold
    clock.advance(60_000);
    assert.equal(deps.renderSlots.has(c.session_id), true, "held");
    // An upgrade whose socket closes before it opens (the client went away).
    const aborted = Object.assign(new EventTarget(), {
      readyState: WebSocket.CONNECTING,
      close() {},
    }) as unknown as WebSocket;
    hub.acceptSocket(aborted, session);
    aborted.dispatchEvent(new CloseEvent("close", { code: 1006 }));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(deps.renderSlots.has(c.session_id), false);
    assert.equal((await statusOf(s, c.session_id)).status, "created");
    const b = await connectActive(s, c.session_id, c.client_token, 2);
    b.close();
  }, { clock, noFfmpegLeft: true });
});

Deno.test("an upgrade refused for a bad handshake holds no render slot", async () => {
  await withLiveStack(async (s) => {
    const deps = s.t.app.deps;
    const c = await createSession(s);
    const res = await s.t.request(
      `/v1/sessions/${encodeURIComponent(c.session_id)}/ws?token=${
        encodeURIComponent(c.client_token)
      }`,
      // No Sec-WebSocket-Key: Deno refuses the upgrade (400 from the app).
      {
        headers: {
          upgrade: "websocket",
          connection: "Upgrade",
          "sec-websocket-version": "13",
        },
      },
    );
    assert.equal(res.status, 400);
    await res.body?.cancel();
    assert.equal(deps.renderSlots.has(c.session_id), false);
    assert.equal((await statusOf(s, c.session_id)).status, "created");
    const b = await connectActive(s, c.session_id, c.client_token, 2);
    b.close();
  }, { noFfmpegLeft: true });
});

Deno.test("an upgrade whose client left before the answer gives its render slot back once it has not opened in time", async () => {
  await withLiveStack(async (s) => {
    const deps = s.t.app.deps;
    const c = await createSession(s);
    // The app behind a server that holds the upgrade while its client goes away.
    const front = holdingServer(s.t.app.handler);
    try {
      const session = (await readSession(deps, c.session_id))!;
      assert.equal(session.status, "created");
      await abandonedUpgrade(
        front.base,
        `/v1/sessions/${encodeURIComponent(c.session_id)}/ws?token=${
          encodeURIComponent(c.client_token)
        }`,
      );
      // Admitted (the lease became a hold), then never opened: the hold goes back.
      const deadline = Date.now() + 4 * SOCKET_OPEN_TIMEOUT_MS;
      let held = true;
      while (held && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        held = deps.renderSlots.has(c.session_id);
      }
      assert.equal(held, false, "the render slot is still held");
      assert.equal((await statusOf(s, c.session_id)).status, "created");
    } finally {
      await front.close();
    }
  }, { noFfmpegLeft: true });
});
