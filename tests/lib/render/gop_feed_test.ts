/**
 * The viewer side of an encoder run (lib/render/gop_feed.ts) on fragments shaped as the
 * live muxer writes them: a keyframe whose AAC came late leaves without audio, and the
 * audio that follows starts before the frame. The soak saw that break a viewer's
 * timeline ("fragment out of the timeline"), and every re-attach replayed the same GOP
 * and broke again, until the session ended as render_failed.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import { GopFeed } from "../../../lib/render/gop_feed.ts";
import { initSegment, mediaFragment } from "../../../lib/render/fmp4_writer.ts";
import { parseFragment } from "../../../lib/render/mp4_parse.ts";
import type { RenderSink } from "../../../lib/ports/render.ts";

const VIDEO_SCALE = 12800; // 25 fps × 512
const AUDIO_RATE = 96000;
const INIT = initSegment(
  {
    width: 64,
    height: 64,
    timescale: VIDEO_SCALE,
    avcC: new Uint8Array([1, 0x42, 0xc0, 0x15]),
  },
  {
    sampleRate: AUDIO_RATE,
    channels: 1,
    asc: new Uint8Array([0x10, 0x08]),
    bitRate: 64000,
  },
);

/** Fragments as ./muxer.ts writes them: frame `n`, AAC frames from `aacFrom`. */
function fragments() {
  let seq = 0;
  return (n: number | null, key: boolean, aacFrom: number, aacCount: number) =>
    mediaFragment({
      sequence: ++seq,
      video: n === null
        ? null
        : { data: new Uint8Array(16), duration: 512, time: n * 512, key },
      audio: Array.from(
        { length: aacCount },
        () => ({ data: new Uint8Array(8), duration: 1024 }),
      ),
      audioTime: aacFrom * 1024,
    });
}

interface Seen {
  sink: RenderSink;
  segments: Uint8Array[];
  errors: string[];
}

function recorder(): Seen {
  const seen: Seen = {
    segments: [],
    errors: [],
    sink: {
      onInit: () => {},
      onSegment: (s) => seen.segments.push(s),
      onError: (e) => seen.errors.push(e.message),
    },
  };
  return seen;
}

/** Each track's start (s) in a delivered fragment. */
function startsOf(seg: Uint8Array): number[] {
  return parseFragment(seg).tracks.map((t) =>
    t.baseDecodeTime / (t.trackId === 1 ? VIDEO_SCALE : AUDIO_RATE)
  );
}

Deno.test("GopFeed: a keyframe without its late audio starts a viewer's timeline where the audio stands", () => {
  const feed = new GopFeed({
    log: memoryLogger(),
    sampleRate: 48000,
    onDelivered: () => {},
  });
  const live = recorder();
  feed.attach(live.sink);
  feed.init(INIT);
  const frag = fragments();
  // Frames 0–24 with their audio (3.75 AAC frames per video frame): 90 AAC frames, to
  // 0.96 s; frame 25 (1.00 s) is a keyframe whose AAC is late, so it leaves alone.
  let aac = 0;
  for (let n = 0; n < 25; n++) {
    const upTo = Math.min(90, Math.floor(((n + 1) * 3840) / 1024));
    feed.segment(frag(n, n === 0, aac, upTo - aac));
    aac = upTo;
  }
  feed.segment(frag(25, true, 0, 0));
  // The late audio rides with frame 26: it starts at 0.96 s, before the keyframe.
  feed.segment(frag(26, false, 90, 12));
  assert.deepEqual(live.errors, []);
  assert.equal(live.segments.length, 27);

  // A takeover's viewer starts on that keyframe's GOP, replayed at once.
  const next = recorder();
  feed.attach(next.sink);
  feed.segment(frag(27, false, 102, 4));
  assert.deepEqual(next.errors, []);
  assert.equal(next.segments.length, 3);
  const [key, late, after] = next.segments.map(startsOf);
  // Both tracks lowered by the same 0.96 s: the audio starts at 0, the frame just after.
  assert.deepEqual(key, [0.04]);
  assert.deepEqual(late, [0.08, 0]);
  assert.deepEqual(after, [0.12, 12 * 1024 / AUDIO_RATE]);
});

Deno.test("GopFeed: fragments of one keyframe with its audio start both tracks at 0", () => {
  const feed = new GopFeed({
    log: memoryLogger(),
    sampleRate: 48000,
    onDelivered: () => {},
  });
  feed.init(INIT);
  const frag = fragments();
  feed.segment(frag(48, true, 180, 4)); // 1.92 s, both tracks
  feed.segment(frag(49, false, 184, 4));
  const viewer = recorder();
  feed.attach(viewer.sink);
  assert.deepEqual(viewer.errors, []);
  assert.deepEqual(viewer.segments.map(startsOf), [[0, 0], [
    0.04,
    4 * 1024 / AUDIO_RATE,
  ]]);
});
