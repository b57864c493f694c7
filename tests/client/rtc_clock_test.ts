/**
 * The WebRTC playback clock (client/rtc_clock.ts): a speech start holds the clock
 * short of its time until its audio is heard (the received energy rising to the
 * audible level after silence), and the lag measured then is the clock's; without
 * energy stats, or without an onset, it goes on with the jitter buffer's delay.
 */
import assert from "node:assert/strict";
import {
  AUDIBLE_RMS,
  ONSET_SLACK_MS,
  RtcClock,
} from "../../client/rtc_clock.ts";

/**
 * A receiver on a fake wall clock: every energy read is 20 ms after the previous one,
 * the audio meanwhile at `level` (RMS).
 */
function receiver(start: number, playoutDelayMs: number) {
  const r = {
    wall: start,
    level: 0,
    energy: 0,
    reports: true,
    heard: 0,
    playoutDelayMs: () => playoutDelayMs,
    audioEnergy() {
      r.wall += 20;
      r.energy += r.level * r.level * 0.02;
      return Promise.resolve(
        r.reports ? { energy: r.energy, at: r.wall } : null,
      );
    },
  };
  const clock = new RtcClock(r, () => r.heard++, () => r.wall);
  return { r, clock };
}

async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) {
    await new Promise((ok) => setTimeout(ok, 5));
  }
  assert.ok(check(), `waited too long for ${what}`);
}

Deno.test("RtcClock: a speech start holds the clock until its audio is heard; the lag measured is the clock's", async () => {
  const { r, clock } = receiver(100_000, 50);
  const speechAt = 100_000;
  clock.speechStarts(speechAt);
  // The jitter buffer's 50 ms would say the speech is heard at 100 050: it is not yet.
  await until("200 ms of silence", () => r.wall >= speechAt + 200);
  assert.ok(clock.now() < speechAt, `${clock.now()}`);
  assert.equal(r.heard, 0);
  // Heard 380 ms in (a burst upstream played out first).
  while (r.wall < speechAt + 360) await new Promise((ok) => setTimeout(ok, 5));
  r.level = AUDIBLE_RMS * 3;
  await until("the onset", () => r.heard === 1);
  const lag = clock.lagMs;
  assert.ok(lag >= 360 && lag <= 420, `lag ${lag}`);
  assert.equal(clock.now(), r.wall - lag);
  assert.ok(clock.now() >= speechAt);
});

Deno.test("RtcClock: where the browser reports no audio energy the jitter buffer's delay is the lag, nothing held", async () => {
  const { r, clock } = receiver(100_000, 60);
  r.reports = false;
  clock.speechStarts(100_010);
  await until("the release", () => r.heard === 1);
  assert.equal(clock.lagMs, 60);
  assert.equal(clock.now(), r.wall - 60);
});

Deno.test("RtcClock: audio audible all along (a takeover mid-speech) measures no lag; the hold ends past its slack", async () => {
  const { r, clock } = receiver(100_000, 40);
  r.level = AUDIBLE_RMS * 5;
  clock.speechStarts(100_000);
  await until("the release", () => r.heard === 1);
  assert.equal(clock.lagMs, 40);
  assert.ok(r.wall >= 100_000 + 40 + ONSET_SLACK_MS);
  assert.equal(clock.now(), r.wall - 40);
});

Deno.test("RtcClock: reset drops the speech awaited and the lag measured", async () => {
  const { r, clock } = receiver(100_000, 30);
  clock.speechStarts(100_000);
  await until("a silent read", () => r.wall >= 100_060);
  r.level = AUDIBLE_RMS * 2;
  await until("the onset", () => r.heard === 1);
  assert.notEqual(clock.lagMs, 30);
  clock.speechStarts(200_000);
  clock.reset();
  assert.equal(clock.lagMs, 30);
  assert.equal(clock.now(), r.wall - 30);
  const heard = r.heard;
  await new Promise((ok) => setTimeout(ok, 60));
  assert.equal(r.heard, heard, "a reset hold is not released later");
});
