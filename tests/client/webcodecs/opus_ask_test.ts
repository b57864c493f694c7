/**
 * When WebCodecs playback asks the media socket for Opus (client/webcodecs/opus_ask.ts):
 * once a socket, for an AAC stream, only where Opus is known to decode (in WebKitGTK:
 * once its WebAssembly decoder runs).
 */
import assert from "node:assert/strict";
import { OpusAsk } from "../../../client/webcodecs/opus_ask.ts";

const AAC = 'video/mp4; codecs="avc1.42c01e, mp4a.40.2"';
const OPUS = 'video/mp4; codecs="avc1.42c01e, opus"';

Deno.test("OpusAsk asks once a socket for an AAC stream where Opus decodes", () => {
  const sent: unknown[] = [];
  let known: boolean | null = null;
  const ask = new OpusAsk((m) => sent.push(m), () => known);
  assert.equal(ask.stream(AAC), false, "not while it is not known");
  known = false;
  assert.equal(ask.stream(AAC), false, "nor where Opus does not decode");
  known = true;
  assert.equal(ask.stream(OPUS), false, "an Opus stream is not asked for");
  assert.equal(ask.stream(AAC), true);
  assert.deepEqual(sent, [{ type: "media.config", audio: "opus" }]);
  assert.equal(ask.stream(AAC), false, "a socket that answers AAC again");
  ask.socketOpened();
  assert.equal(ask.stream(AAC), true, "a new socket is asked again");
  assert.equal(sent.length, 2);
});
