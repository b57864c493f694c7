/**
 * Fixtures shared by the built-in renderer tests: a renderer on a hand-driven clock,
 * a session attached to a recording sink, and checks on the encoder processes.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import {
  type BuiltinOptions,
  createBuiltinRenderer,
} from "../../../lib/render/builtin.ts";
import { liveEncoderPids } from "../../../lib/render/encoder.ts";
import {
  assertNoEncoders,
  ManualClock,
  notePids,
  RecordingSink,
  timelines,
} from "./_helpers.ts";

export const OPEN = {
  sessionId: "session:test",
  avatarId: "ava",
  bgId: "studio",
};

/** A 128×128 built-in renderer on a manual clock, with its onClose hooks. */
export function renderer(options: BuiltinOptions = {}) {
  const onClose: Array<() => void | Promise<void>> = [];
  const clock = new ManualClock();
  const backend = createBuiltinRenderer({ log: memoryLogger(), onClose }, {
    width: 128,
    height: 128,
    clock,
    ...options,
  });
  return { backend, clock, onClose };
}

/** A renderer with one session open on `OPEN`, attached to a recording sink. */
export async function attached(options: BuiltinOptions = {}) {
  const { backend, clock } = renderer(options);
  const session = await backend.open(OPEN);
  const sink = new RecordingSink();
  session.attach(sink);
  return { clock, session, sink };
}

/** Where the sink's video timeline ends, in ffmpeg's 12800 Hz ticks (512 a frame). */
export function videoEnd(sink: RecordingSink): number {
  const video = timelines(sink.inits[0].init, sink.segments).get(1)!;
  const last = video[video.length - 1];
  return last.start + last.duration;
}

/** Advances the clock frame by frame (40 ms steps) for `ms`. */
export function run(clock: ManualClock, ms: number): void {
  for (let t = 0; t < ms; t += 40) clock.advance(40);
}

/** Pid of the only encoder running now. */
export function onlyEncoder(): number {
  notePids();
  const pids = liveEncoderPids();
  assert.equal(pids.length, 1);
  return pids[0];
}

/** Asserts no encoder of this module is left (see assertNoEncoders()). */
export function noEncoders(): void {
  assertNoEncoders();
}
