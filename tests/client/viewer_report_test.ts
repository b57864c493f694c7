/**
 * The browser client's `client.stats` reports (client/viewer_report.ts): every 5 s, soon
 * after the first frame, never closer than the service takes them, with only what the
 * player measured for its decoder.
 */
import assert from "node:assert/strict";
import {
  REPORT_EVERY_MS,
  REPORT_MIN_GAP_MS,
  ViewerReport,
} from "../../client/viewer_report.ts";
import type { PlayerStats } from "../../client/player_types.ts";
import { ARRIVALS_KEPT, ArrivalWait } from "../../client/arrival_wait.ts";
import { NO_WEBCODECS } from "../../client/webcodecs/player.ts";

const base: PlayerStats = {
  streams: 1,
  segmentsAppended: 0,
  segmentsDropped: 0,
  liveEdgeJumps: 0,
  gapSkips: 2,
  arrivalWaitMs: 180,
  micFramesSent: 0,
  reconnects: 0,
  rtc: {
    peerConnections: 0,
    framesDecoded: 0,
    audioPacketsReceived: 0,
    playoutDelayMs: 0,
  },
  decoder: "webcodecs",
  webcodecs: {
    ...NO_WEBCODECS,
    underruns: 3,
    latencyMs: 41.6,
    arrivalWaitMs: 52,
    outputLatencyMs: 10.4,
    framesDrawn: 250,
    framesSkipped: 4,
  },
};

Deno.test("ViewerReport: due every 5 s, soon after the first frame, never within the service's second", () => {
  let now = 0;
  const r = new ViewerReport(() => now);
  r.opened();
  assert.equal(r.due(), true, "the first at once");
  now += 300;
  r.shown();
  assert.equal(r.due(), false, "the first frame's waits for the gap");
  now = REPORT_MIN_GAP_MS;
  assert.equal(r.due(), true, "then goes out");
  now += REPORT_MIN_GAP_MS;
  r.shown(); // not the first frame any more: no news
  assert.equal(r.due(), false);
  now = REPORT_MIN_GAP_MS + REPORT_EVERY_MS;
  assert.equal(r.due(), true, "every 5 s");
  assert.deepEqual(r.message(base), {
    type: "client.stats",
    decoder: "webcodecs",
    first_frame_ms: 300,
    underruns: 3,
    jitter_buffer_ms: 42,
    audio_output_latency_ms: 10,
    glass_to_glass_ms_est: 62,
    frames_shown: 250,
    frames_dropped: 4,
  });
});

Deno.test("ViewerReport: each decoder reports what it measures; a new socket times its own first frame", () => {
  let now = 0;
  const r = new ViewerReport(() => now);
  assert.deepEqual(r.message({ ...base, decoder: null }), {
    type: "client.stats",
  });
  r.opened();
  now = 700;
  r.shown();
  assert.deepEqual(r.message({ ...base, decoder: "mse" }), {
    type: "client.stats",
    decoder: "mse",
    first_frame_ms: 700,
    stalls: 2,
    glass_to_glass_ms_est: 180,
  });
  r.opened();
  assert.deepEqual(
    r.message({
      ...base,
      decoder: "webrtc",
      rtc: { ...base.rtc, framesDecoded: 90, playoutDelayMs: 33.3 },
    }),
    {
      type: "client.stats",
      decoder: "webrtc",
      jitter_buffer_ms: 33,
      frames_shown: 90,
      glass_to_glass_ms_est: 33,
    },
  );
  // Nothing arrived yet: no estimate.
  assert.equal(
    "glass_to_glass_ms_est" in r.message({
      ...base,
      webcodecs: { ...base.webcodecs, arrivalWaitMs: null },
    }),
    false,
  );
});

Deno.test("ArrivalWait: the median wait over the latest arrivals, a new stream starts over", () => {
  const w = new ArrivalWait();
  assert.equal(w.ms, null);
  for (const ms of [40, 60, 50, -5, NaN]) w.sample(ms);
  assert.equal(w.ms, 50, "the median; a negative or NaN wait ignored");
  w.sample(1000);
  assert.equal(w.ms, 55, "an even count: the mean of the middle two");
  // Only the latest ARRIVALS_KEPT count: an old burst of long waits is forgotten.
  for (let i = 0; i < ARRIVALS_KEPT; i++) w.sample(30);
  assert.equal(w.ms, 30);
  w.reset();
  assert.equal(w.ms, null);
});
