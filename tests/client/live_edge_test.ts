/**
 * The live-edge policy of MSE playback (client/live_edge.ts): a jump past the limit,
 * a new stream caught up sooner, and no seek storm on a browser slower to preroll than
 * the stream grows — the storm that played WebKitGTK under load no sound for a minute
 * (72 jumps in 64 s) — and jumps that skip silence, not the avatar's answer.
 */
import assert from "node:assert/strict";
import {
  CATCH_UP_MS,
  LiveEdge,
  MAX_ROOM,
  NUDGE_S,
  SEEK_WAIT_MS,
  SeekWait,
  SETTLE_MAX_MS,
  SETTLE_S,
  SPEECH_CAP,
  SPEECH_LEAD_S,
} from "../../client/live_edge.ts";

const MAX = 1;
const TARGET = 0.25;

function edge(): LiveEdge {
  const e = new LiveEdge(MAX, TARGET);
  // A stream that started long ago: its catch-up is over.
  e.reset(-CATCH_UP_MS - 1);
  return e;
}

Deno.test("LiveEdge: past the limit the playhead jumps to the target before the newest media", () => {
  const e = edge();
  assert.equal(e.decide({ now: 0, time: 10, end: 10.9 }), null);
  assert.equal(e.decide({ now: 0, time: 10, end: 11.2 }), 11.2 - TARGET);
});

Deno.test("LiveEdge: a new stream is moved once past the target and its slack, only at first", () => {
  const e = new LiveEdge(MAX, TARGET);
  e.reset(0);
  assert.equal(e.decide({ now: 100, time: 0, end: 0.6 }), 0.6 - TARGET);
  const later = new LiveEdge(MAX, TARGET);
  later.reset(0);
  assert.equal(later.decide({ now: CATCH_UP_MS + 1, time: 0, end: 0.6 }), null);
});

Deno.test("LiveEdge: a slow preroll is not jumped over again: one jump, then playback, then the next", () => {
  const e = edge();
  let now = 0;
  let time = 10;
  let end = 11.2;
  const to = e.decide({ now, time, end })!;
  assert.equal(to, end - TARGET);
  time = to;
  // The browser takes a second to preroll: nothing plays, the stream grows past the
  // limit — and the playhead is left to start.
  let jumps = 0;
  for (let i = 0; i < 10; i++) {
    now += 100;
    end += 0.1;
    if (e.decide({ now, time, end }) !== null) jumps++;
  }
  assert.equal(jumps, 0);
  // It plays half a second, 1.25 s behind: past the limit so soon after the jump, the
  // stream gets more room instead of another jump.
  now += SETTLE_S * 1000;
  time += SETTLE_S;
  end += SETTLE_S;
  assert.equal(e.decide({ now, time, end }), null);
  assert.equal(e.maxLagS, MAX * 1.5);
  // Past that room too (another half second stalled): it jumps, the room stays.
  now += 500;
  end += 0.5;
  assert.equal(e.decide({ now, time, end }), end - TARGET);
  assert.equal(e.maxLagS, MAX * 1.5);
});

Deno.test("LiveEdge: a browser whose every seek costs a second of preroll jumps once, then plays on", () => {
  const e = edge();
  let time = 10;
  let end = 11.2;
  let prerollUntil = -1;
  let jumps = 0;
  // 20 s in 100-ms ticks: the stream grows in real time; after a jump nothing plays
  // for a second, then the video plays in real time.
  for (let now = 0; now < 20_000; now += 100) {
    const to = e.decide({ now, time, end });
    if (to !== null) {
      jumps++;
      time = to;
      prerollUntil = now + 1000;
    }
    end += 0.1;
    if (now >= prerollUntil) time += 0.1;
  }
  assert.equal(jumps, 1);
  assert.equal(e.maxLagS, MAX * 1.5);
});

Deno.test("LiveEdge: each jump followed soon by a fall past the room adds room, up to its cap", () => {
  const e = edge();
  let now = 0;
  let time = 0;
  const rooms: number[] = [];
  for (let i = 0; i < 8; i++) {
    // Far behind: a jump (and, this soon after the last, more room first).
    const to = e.decide({ now, time, end: time + 100 });
    assert.notEqual(to, null);
    rooms.push(e.maxLagS);
    // It plays past the settle a second later, and is far behind again.
    now += 1000;
    time = to! + SETTLE_S;
  }
  assert.deepEqual(rooms, [1, 1.5, 2, 2.5, 3, 3, 3, 3]);
  assert.equal(e.maxLagS, MAX * MAX_ROOM);
});

Deno.test("LiveEdge: a jump that never plays is followed by another after a while; a new stream starts afresh", () => {
  const e = edge();
  const to = e.decide({ now: 0, time: 10, end: 11.2 })!;
  assert.equal(e.decide({ now: SETTLE_MAX_MS - 1, time: to, end: 14 }), null);
  assert.equal(
    e.decide({ now: SETTLE_MAX_MS, time: to, end: 14 }),
    14 - TARGET,
  );
  e.reset(10_000);
  assert.equal(e.maxLagS, MAX);
  assert.equal(e.decide({ now: 10_100, time: 0, end: 0.3 }), null);
});

Deno.test("LiveEdge: no jump while the avatar speaks, unless far behind; speech buffered ahead is landed before, not skipped", () => {
  const speaking = { speaking: true, nextStartS: null };
  const e = edge();
  assert.equal(e.decide({ now: 0, time: 10, end: 12, speech: speaking }), null);
  assert.equal(
    e.decide({
      now: 0,
      time: 10,
      end: 10 + MAX * SPEECH_CAP + 0.1,
      speech: speaking,
    }),
    10 + MAX * SPEECH_CAP + 0.1 - TARGET,
  );
  // Quiet now, an answer starts 0.5 s ahead of the playhead: the jump lands before it.
  const ahead = edge();
  assert.equal(
    ahead.decide({
      now: 0,
      time: 10,
      end: 12,
      speech: { speaking: false, nextStartS: 10.5 },
    }),
    10.5 - SPEECH_LEAD_S,
  );
  // It starts right at the playhead: nothing to skip.
  const close = edge();
  assert.equal(
    close.decide({
      now: 0,
      time: 10,
      end: 12,
      speech: { speaking: false, nextStartS: 10.05 },
    }),
    null,
  );
  // A start past where the jump lands is not skipped: the usual jump.
  const after = edge();
  assert.equal(
    after.decide({
      now: 0,
      time: 10,
      end: 12,
      speech: { speaking: false, nextStartS: 11.9 },
    }),
    12 - TARGET,
  );
});

Deno.test("SeekWait: a seek under way is waited for, at most SEEK_WAIT_MS; then the next one gets its own wait", () => {
  const w = new SeekWait();
  assert.equal(w.wait(0, false), false);
  assert.equal(w.wait(100, true), true);
  assert.equal(w.wait(100 + SEEK_WAIT_MS - 1, true), true);
  // Stuck (WebKitGTK kept one pending for a minute): overridden.
  assert.equal(w.wait(100 + SEEK_WAIT_MS, true), false);
  assert.equal(w.wait(100 + SEEK_WAIT_MS + 10, true), true);
  // Done: the next seek starts its wait afresh.
  assert.equal(w.wait(5000, false), false);
  assert.equal(w.wait(5001, true), true);
});

Deno.test("LiveEdge: a playhead stuck just before a speech start is sought again, the speech kept", () => {
  // WebKitGTK under load: the jump landed just before the answer and the video never
  // moved from there; each later decision put the jump "before the speech", at or
  // behind the playhead, so none was made: the page waited a minute (arrival 60 s).
  const e = edge();
  const start = 20;
  const speech = { speaking: false, nextStartS: start };
  let now = 0, end = 21.2;
  const to = e.decide({ now, time: 10, end, speech })!;
  assert.equal(to, start - SPEECH_LEAD_S);
  const seeks: number[] = [];
  for (let i = 0; i < 40; i++) {
    now += 250;
    end += 0.25;
    const again = e.decide({ now, time: to, end, speech });
    if (again !== null) seeks.push(again);
  }
  // Sought again just past where it is (still before the speech) once it has not
  // moved for a while, not on every decision.
  assert.ok(seeks.length >= 2 && seeks.length <= 4, JSON.stringify(seeks));
  for (const s of seeks) assert.equal(s, to + NUDGE_S);
  // Stuck there from the first (no jump before): the same.
  const f = edge();
  let t0 = 0, found: number | null = null;
  for (let i = 0; i < 20 && found === null; i++) {
    t0 += 250;
    found = f.decide({
      now: t0,
      time: start - 0.05,
      end: start + 1.2 + i * 0.25,
      speech,
    });
  }
  assert.equal(found, start - 0.05 + NUDGE_S);
  assert.ok(t0 >= SETTLE_MAX_MS, `after ${t0} ms`);
});

Deno.test("LiveEdge: a playhead stuck inside speech is sought again just past where it is", () => {
  const e = edge();
  const speech = { speaking: true, nextStartS: null };
  let now = 0, found: number | null = null;
  for (let i = 0; i < 20 && found === null; i++) {
    now += 250;
    found = e.decide({ now, time: 30, end: 31.5 + i * 0.1, speech });
  }
  assert.equal(found, 30 + NUDGE_S);
  assert.ok(now >= SETTLE_MAX_MS, `after ${now} ms`);
});

Deno.test("LiveEdge: a playhead that seeking does not move is sought again less and less often", () => {
  // A browser slow to preroll is not kept seeking: 3 s, then 6 more, then 12 more.
  const e = edge();
  const speech = { speaking: true, nextStartS: null };
  let now = 0;
  const at: number[] = [];
  for (let i = 0; i < 100; i++) {
    now += 250;
    if (e.decide({ now, time: 30, end: 32 + i * 0.01, speech }) !== null) {
      at.push(now);
    }
  }
  // (Its first decision, at 250 ms, is when it was first seen there.)
  assert.deepEqual(
    at,
    [1, 3, 7].map((k) => 250 + k * SETTLE_MAX_MS),
  );
});
