/**
 * The autoplay policy for WebCodecs audio (client/autoplay.ts): a context still
 * suspended after one resume is blocked, unless the browser says its policy allows
 * audio contexts (Firefox opens its audio stream for the resume: slow, not blocked).
 */
import assert from "node:assert/strict";
import { Autoplay } from "../../client/autoplay.ts";
import type { WebCodecsPlayback } from "../../client/webcodecs/player.ts";

/** A WebCodecs playback with media whose audio stays suspended; counts resumes. */
function suspendedPlayback() {
  const wc = { hasMedia: true, suspended: true, resumes: 0 };
  const play = () => {
    wc.resumes++;
    return Promise.resolve();
  };
  return { wc, playback: { ...wc, play } as unknown as WebCodecsPlayback };
}

/** Runs `fn` with `navigator.getAutoplayPolicy` answering `answer` for audio contexts. */
function withPolicy(answer: string | undefined, fn: () => void): void {
  const nav = globalThis.navigator as unknown as Record<string, unknown>;
  const before = nav.getAutoplayPolicy;
  if (answer === undefined) delete nav.getAutoplayPolicy;
  else {
    nav.getAutoplayPolicy = (type: string) =>
      type === "audiocontext" ? answer : "disallowed";
  }
  try {
    fn();
  } finally {
    if (before === undefined) delete nav.getAutoplayPolicy;
    else nav.getAutoplayPolicy = before;
  }
}

function startTwice(): number {
  let blocked = 0;
  const a = new Autoplay({} as HTMLVideoElement, () => blocked++);
  const { playback } = suspendedPlayback();
  a.startWebCodecs(playback);
  a.startWebCodecs(playback);
  a.startWebCodecs(playback);
  return blocked;
}

Deno.test("WebCodecs audio still suspended after a resume is blocked, said once", () => {
  withPolicy(undefined, () => assert.equal(startTwice(), 1));
  withPolicy("disallowed", () => assert.equal(startTwice(), 1));
});

Deno.test("WebCodecs audio the browser's policy allows is not blocked while its resume is slow", () => {
  withPolicy("allowed", () => assert.equal(startTwice(), 0));
});
