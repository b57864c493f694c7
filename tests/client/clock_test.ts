/**
 * The playback clock's wake-ups on the `<video>` path (client/clock.ts) with a
 * `SpeakingSchedule` on it: an event fires when the video's time reaches it, on the
 * next presented frame or by a timer when no frame comes (a background tab, a starved
 * compositor), once either way; a paused video is polled at most every 20 ms.
 */
import assert from "node:assert/strict";
import { MediaClock } from "../../client/clock.ts";
import { SpeakingSchedule } from "../../client/speaking.ts";
import type { SpeakingDetail } from "../../client/player_types.ts";

/** A `<video>` whose time the test sets and whose frames it presents by hand. */
function fakeVideo(currentTime: number) {
  const frames = new Map<number, () => void>();
  let next = 1;
  const video = {
    currentTime,
    playbackRate: 1,
    asked: 0,
    requestVideoFrameCallback(cb: () => void): number {
      video.asked++;
      frames.set(next, cb);
      return next++;
    },
    cancelVideoFrameCallback(handle: number): void {
      frames.delete(handle);
    },
    /** Presents a frame: runs the callbacks asked for it. */
    present(): void {
      const due = [...frames.values()];
      frames.clear();
      for (const cb of due) cb();
    },
    get waiting(): number {
      return frames.size;
    },
  };
  return video;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function schedule(video: ReturnType<typeof fakeVideo>) {
  const fired: SpeakingDetail[] = [];
  const s = new SpeakingSchedule(
    new MediaClock(video as unknown as HTMLVideoElement),
    (d) => fired.push(d),
  );
  return { s, fired };
}

const START = { speaking: true, turn_id: "turn_1", media_time_ms: 1000 };

Deno.test("MediaClock: an event fires when the video's time reaches it, though no frame is presented", async () => {
  const video = fakeVideo(0.99);
  const { s, fired } = schedule(video);
  s.add(START);
  assert.equal(fired.length, 0);
  video.currentTime = 1.0;
  await sleep(120);
  assert.deepEqual(fired, [START]);
  // The frame callback asked for it was given back.
  assert.equal(video.waiting, 0);
});

Deno.test("MediaClock: a presented frame fires the event once; its timer does not fire it again", async () => {
  const video = fakeVideo(0.99);
  const { s, fired } = schedule(video);
  s.add(START);
  s.add({ speaking: false, turn_id: "turn_1", media_time_ms: 5000 });
  video.currentTime = 1.0;
  video.present();
  assert.deepEqual(fired, [START]);
  const asked = video.asked;
  await sleep(120);
  // The stop is not due: the wakes went on looking, nothing fired twice.
  assert.deepEqual(fired, [START]);
  assert.ok(video.asked > asked);
  // A new stream drops the stop; the last wake finds nothing left to watch.
  s.reset();
  await sleep(60);
  assert.equal(video.waiting, 0);
});

Deno.test("MediaClock: a paused video with an event pending is looked at no more often than every 20 ms", async () => {
  const video = fakeVideo(0.999);
  const { s, fired } = schedule(video);
  s.add(START);
  await sleep(200);
  assert.equal(fired.length, 0);
  // 200 ms at one look per ≥ 20 ms: at most 11 wakes (that it keeps watching, the
  // event firing below shows).
  assert.ok(video.asked <= 11, String(video.asked));
  video.currentTime = 1.0;
  await sleep(80);
  assert.deepEqual(fired, [START]);
});

Deno.test("SpeakingSchedule: what speech is at and ahead of the playhead, for the live edge", () => {
  const video = fakeVideo(0.5);
  const { s } = schedule(video);
  s.add({ speaking: true, turn_id: "turn_1", media_time_ms: 2000 });
  s.add({ speaking: false, turn_id: "turn_1", media_time_ms: 3000 });
  assert.deepEqual(s.speechAhead(1500), { speaking: false, nextStartMs: null });
  assert.deepEqual(s.speechAhead(2500), { speaking: false, nextStartMs: 2000 });
  video.currentTime = 2.2;
  video.present();
  assert.deepEqual(s.speechAhead(2500), { speaking: true, nextStartMs: null });
  s.reset();
});
