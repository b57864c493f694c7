/**
 * `client.stats` (DECISIONS 6): what the viewer experiences, reported by the browser
 * client, parsed by the socket's schema, at most one a second, into the app's metrics.
 */
import assert from "node:assert/strict";
import { AppMetrics } from "../../../lib/metrics/registry.ts";
import {
  type ClientStats,
  ViewerStats,
} from "../../../lib/media/viewer_stats.ts";
import { withLiveSession } from "./_live_session.ts";

const report = (s: Omit<ClientStats, "type">): ClientStats => ({
  type: "client.stats",
  ...s,
});

Deno.test("ViewerStats: first frame once a socket, glass to glass per report, stalls and underruns by what they grew; one report a second", async () => {
  let now = 0;
  const metrics = new AppMetrics();
  const v = new ViewerStats(metrics, () => now);
  assert.equal(
    v.report(report({
      decoder: "webcodecs",
      first_frame_ms: 140,
      glass_to_glass_ms_est: 48,
      stalls: 1,
      underruns: 2,
    })),
    true,
  );
  now += 500;
  // Too soon: dropped, nothing counted.
  assert.equal(
    v.report(report({ decoder: "webcodecs", stalls: 50, first_frame_ms: 9 })),
    false,
  );
  now += 600;
  assert.equal(
    v.report(report({
      decoder: "webcodecs",
      first_frame_ms: 140,
      glass_to_glass_ms_est: 52,
      stalls: 3,
      underruns: 2,
    })),
    true,
  );
  // A takeover: the new socket's counts start from zero, its first frame counts.
  v.newSocket();
  now += 5000;
  v.report(report({ decoder: "mse", first_frame_ms: 300, stalls: 1 }));
  const text = (await metrics.expose()).body;
  assert.match(
    text,
    /avatar_viewer_first_frame_seconds_count\{decoder="webcodecs"\} 1\n/,
  );
  assert.match(
    text,
    /avatar_viewer_first_frame_seconds_count\{decoder="mse"\} 1\n/,
  );
  assert.match(
    text,
    /avatar_viewer_glass_to_glass_seconds_count\{decoder="webcodecs"\} 2\n/,
  );
  assert.match(text, /avatar_viewer_stalls_total\{decoder="webcodecs"\} 3\n/);
  assert.match(text, /avatar_viewer_stalls_total\{decoder="mse"\} 1\n/);
  assert.match(
    text,
    /avatar_viewer_underruns_total\{decoder="webcodecs"\} 2\n/,
  );
  assert.equal(v.freshDecoder(), "mse");
  now += 16_000;
  assert.equal(v.freshDecoder(), null, "a stale report says nothing now");
});

Deno.test("a client.stats frame is parsed by the socket's schema: counted when valid, invalid_message when not", () =>
  withLiveSession(async (live, ws) => {
    const send = (msg: unknown) =>
      ws.onmessage!(
        new MessageEvent("message", { data: JSON.stringify(msg) }),
      );
    send({
      type: "client.stats",
      decoder: "webrtc",
      first_frame_ms: 90,
      frames_shown: 25,
      an_extra_field: "ignored",
    });
    assert.equal(live.viewer.latest?.stats.decoder, "webrtc");
    const before = ws.json.length;
    for (
      const bad of [
        { type: "client.stats", decoder: "flash" },
        { type: "client.stats", first_frame_ms: -1 },
        { type: "client.stats", stalls: 1.5 },
        { type: "client.stats", glass_to_glass_ms_est: 1e12 },
      ]
    ) send(bad);
    assert.deepEqual(
      ws.json.slice(before).map((m) => (m as { code?: string }).code),
      Array(4).fill("invalid_message"),
    );
    const text = (await live.deps.metrics.expose()).body;
    assert.match(
      text,
      /avatar_viewer_first_frame_seconds_count\{decoder="webrtc"\} 1\n/,
    );
  }));
