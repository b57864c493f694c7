import assert from "node:assert/strict";
import {
  parseInitSegment,
  parseMediaSegment,
} from "../../../client/webcodecs/fmp4.ts";
import { AAC_RATE } from "../../../lib/render/ffmpeg.ts";
import { parseInit } from "../../../lib/render/mp4_parse.ts";
import { encodeSample } from "../../lib/render/_helpers.ts";

const W = 128;
const H = 96;
const FRAMES = 60;

/** NAL unit types of one AVCC sample (4-byte lengths); throws when they do not tile it. */
function nalTypes(data: Uint8Array): number[] {
  const types: number[] = [];
  let at = 0;
  while (at < data.length) {
    const len = new DataView(data.buffer, data.byteOffset + at).getUint32(0);
    types.push(data[at + 4] & 0x1f);
    at += 4 + len;
  }
  assert.equal(at, data.length, "NAL lengths tile the sample");
  return types;
}

Deno.test("fmp4 demuxer on the real encoder output", async (t) => {
  const { init, segments } = await encodeSample(W, H, FRAMES);
  const tracks = parseInitSegment(init);
  const video = tracks.find((x) => x.kind === "video")!;
  const audio = tracks.find((x) => x.kind === "audio")!;

  await t.step("parseInitSegment() gives both decoder configurations", () => {
    const mime = parseInit(init).mime;
    assert.equal(mime, `video/mp4; codecs="${video.codec}, ${audio.codec}"`);
    assert.equal(video.width, W);
    assert.equal(video.height, H);
    // avcC: configurationVersion 1, then profile/compat/level as in the codec string.
    assert.equal(video.description[0], 1);
    assert.equal(
      `avc1.${
        [...video.description.subarray(1, 4)].map((b) =>
          b.toString(16).padStart(2, "0")
        ).join("")
      }`,
      video.codec,
    );
    assert.equal(audio.codec, "mp4a.40.2");
    assert.equal(audio.sampleRate, AAC_RATE);
    assert.equal(audio.channels, 1);
    // AudioSpecificConfig: AAC-LC (object type 2) at 96 kHz (index 0), mono.
    assert.equal(audio.description[0] >> 3, 2);
    assert.equal(
      ((audio.description[0] & 7) << 1) | (audio.description[1] >> 7),
      0,
    );
    assert.ok(audio.description.length >= 2);
  });

  const samples = segments.flatMap((s) => parseMediaSegment(s, tracks));
  const v = samples.filter((s) => s.trackId === video.trackId);
  const a = samples.filter((s) => s.trackId === audio.trackId);

  await t.step("frames are continuous, keyframes a second apart", () => {
    // The encoder may hold back the last frame at the graceful stop.
    assert.ok(v.length >= FRAMES - 2, `${v.length} frames`);
    assert.equal(v[0].ptsUs, 0);
    for (const [i, s] of v.entries()) {
      if (i > 0) assert.equal(s.ptsUs, v[i - 1].ptsUs + v[i - 1].durationUs);
      // 40 ms frames (the encoder stretches the very first to cover a late second).
      if (i > 0 && i < v.length - 1) assert.equal(s.durationUs, 40_000);
      assert.equal(nalTypes(s.data).includes(5), s.key, `frame ${i} IDR slice`);
    }
    const keys = v.flatMap((s, i) => s.key ? [i] : []);
    assert.equal(keys[0], 0);
    assert.ok(keys.length >= 2, `keyframes at ${keys}`);
    for (let k = 2; k < keys.length; k++) {
      assert.equal(keys[k] - keys[k - 1], 25);
    }
  });

  await t.step("audio frames are continuous 1024-sample AAC frames", () => {
    assert.ok(a.length > 50, `${a.length} audio frames`);
    for (let i = 1; i < a.length; i++) {
      assert.ok(
        Math.abs(a[i].ptsUs - (a[i - 1].ptsUs + a[i - 1].durationUs)) <= 1,
        `audio frame ${i} follows the one before`,
      );
      if (i < a.length - 1) {
        assert.equal(a[i].durationUs, Math.round(1024 / AAC_RATE * 1e6));
      }
      assert.ok(a[i].data.length > 0);
    }
    // The encoder's priming frame is dropped: audio starts with video, at 0.
    assert.equal(a[0].ptsUs, 0);
    assert.equal(v[0].ptsUs, 0);
  });

  await t.step("parseMediaSegment() refuses a sample past the segment", () => {
    const cut = segments[3].slice(0, segments[3].length - 10);
    assert.throws(
      () => parseMediaSegment(cut, tracks),
      /past the segment|bad mp4 box/,
    );
  });
});
