import assert from "node:assert/strict";
import { segmentProblem } from "../../../lib/render/segments.ts";
import { parseBoxes } from "../../../lib/render/mp4_boxes.ts";
import { parseFragment, parseInit } from "../../../lib/render/mp4_parse.ts";
import { encodeSample, timelines } from "./_helpers.ts";

const W = 128;
const H = 96;
const FRAMES = 60;

Deno.test("mp4 boxes of the real encoder output", async (t) => {
  const { init, segments } = await encodeSample(W, H, FRAMES);

  await t.step("init segment is ftyp then moov, and moov has mvex", () => {
    assert.deepEqual(parseBoxes(init).map((b) => b.type), ["ftyp", "moov"]);
    const info = parseInit(init);
    assert.equal(info.hasMvex, true);
    assert.deepEqual(info.tracks.map((x) => x.kind), ["video", "audio"]);
  });

  await t.step(
    "parseInit() builds the codecs string from avcC and esds",
    () => {
      const info = parseInit(init);
      const at = new TextDecoder("latin1").decode(init).indexOf("avcC") + 4;
      const hex = [...init.subarray(at + 1, at + 4)]
        .map((b) => b.toString(16).padStart(2, "0")).join("");
      assert.equal(info.mime, `video/mp4; codecs="avc1.${hex}, mp4a.40.2"`);
      // Baseline profile (0x42) as configured.
      assert.match(hex, /^42/);
    },
  );

  await t.step("every segment is moof+mdat with default-base-is-moof", () => {
    assert.ok(segments.length >= FRAMES - 2, `${segments.length} segments`);
    for (const seg of segments) {
      assert.deepEqual(parseBoxes(seg).map((b) => b.type), ["moof", "mdat"]);
      for (const tr of parseFragment(seg).tracks) {
        assert.equal(tr.defaultBaseIsMoof, true);
        assert.equal(tr.hasBaseDataOffset, false);
      }
    }
  });

  await t.step("tfdt starts at 0 and is contiguous per track", () => {
    const lines = timelines(init, segments);
    assert.equal(lines.size, 2);
    for (const [, list] of lines) {
      assert.equal(list[0].start, 0);
      for (let i = 1; i < list.length; i++) {
        assert.equal(list[i].start, list[i - 1].start + list[i - 1].duration);
      }
    }
  });

  await t.step(
    "first fragment starts on a keyframe; one keyframe a second",
    () => {
      const video = timelines(init, segments).get(1)!;
      assert.equal(video[0].sync, true);
      const keyStarts = video.filter((v) => v.sync).map((v) => v.start);
      assert.ok(keyStarts.length >= 2);
      // 12800 is the video timescale ffmpeg picks for 25 fps (512 a frame): keyframes
      // come every second, give or take the frame the first sample is stretched over.
      for (let i = 1; i < keyStarts.length; i++) {
        assert.ok(keyStarts[i] - keyStarts[i - 1] <= 12800 + 512);
      }
      assert.ok(video.filter((v) => !v.sync).length > 0);
    },
  );

  await t.step("fragments are at most 200 ms long", () => {
    const info = parseInit(init);
    for (const [id, list] of timelines(init, segments)) {
      const scale = info.tracks.find((x) => x.trackId === id)!.timescale;
      for (const f of list) assert.ok(f.duration / scale <= 0.2);
    }
  });

  await t.step(
    "segmentProblem() accepts the stream's first segment only as is",
    () => {
      assert.equal(segmentProblem(segments[0], 1), null);
      assert.equal(
        segmentProblem(segments[1], 1),
        "stream does not start on a keyframe",
      );
      const bad = segments[0].slice();
      const at = new TextDecoder("latin1").decode(bad).indexOf("tfhd") + 4;
      bad[at + 1] &= ~0x02; // clear default-base-is-moof (flag 0x020000)
      assert.equal(
        segmentProblem(bad, 1),
        "fragment tfhd is not default-base-is-moof",
      );
    },
  );
});

Deno.test("parseInit() rejects bytes without a moov", () => {
  const ftyp = new Uint8Array(16);
  new DataView(ftyp.buffer).setUint32(0, 16);
  ftyp.set(new TextEncoder().encode("ftyp"), 4);
  assert.throws(() => parseInit(ftyp), /without moov/);
});
