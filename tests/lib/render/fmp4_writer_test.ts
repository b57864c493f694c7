import assert from "node:assert/strict";
import {
  audioCodecString,
  initSegment,
} from "../../../lib/render/fmp4_writer.ts";
import {
  type Box,
  boxType,
  child,
  parseBoxes,
  path,
  u32,
} from "../../../lib/render/mp4_boxes.ts";
import { parseInit } from "../../../lib/render/mp4_parse.ts";

const VIDEO = {
  width: 64,
  height: 64,
  timescale: 12800,
  avcC: new Uint8Array([1, 0x42, 0xc0, 0x15]),
};
const OPUS = {
  codec: "opus" as const,
  channels: 1,
  preSkip: 120,
  inputRate: 48000,
};
const AAC = {
  sampleRate: 96000,
  channels: 1,
  asc: new Uint8Array([0x10, 0x08]),
  bitRate: 64000,
};

const u16 = (b: Uint8Array, at: number) => (b[at] << 8) | b[at + 1];

/** The audio trak (the second) of an init segment. */
function audioTrak(init: Uint8Array): Box {
  const moov = parseBoxes(init).find((b) => b.type === "moov")!;
  const traks = parseBoxes(init, moov.bodyStart, moov.end)
    .filter((b) => b.type === "trak");
  assert.equal(traks.length, 2);
  return traks[1];
}

Deno.test("initSegment() with an Opus config: an Opus sample entry with its dOps", () => {
  const init = initSegment(VIDEO, OPUS);
  assert.deepEqual(parseBoxes(init).map((b) => b.type), ["ftyp", "moov"]);
  const trak = audioTrak(init);
  const hdlr = path(init, trak, ["mdia", "hdlr"])!;
  assert.equal(boxType(init, hdlr.bodyStart + 8), "soun");
  const mdhd = path(init, trak, ["mdia", "mdhd"])!;
  assert.equal(u32(init, mdhd.bodyStart + 12), 48000, "timescale");
  const stsd = path(init, trak, ["mdia", "minf", "stbl", "stsd"])!;
  assert.equal(u32(init, stsd.bodyStart + 4), 1, "one entry");
  const [entry] = parseBoxes(init, stsd.bodyStart + 8, stsd.end);
  assert.equal(entry.type, "Opus");
  // AudioSampleEntry: data reference 1, the channel count, 16-bit, 48000 in 16.16.
  const e = entry.bodyStart;
  assert.equal(u16(init, e + 6), 1);
  assert.equal(u16(init, e + 16), 1, "channelcount");
  assert.equal(u16(init, e + 18), 16, "samplesize");
  assert.equal(u32(init, e + 24), 48000 * 0x10000, "samplerate");
  const dOps = child(init, entry, "dOps", 28)!;
  assert.ok(dOps, "dOps after the 28 bytes of AudioSampleEntry fields");
  const d = init.subarray(dOps.bodyStart, dOps.end);
  assert.equal(d.length, 11, "version 0, mapping family 0: no mapping table");
  assert.equal(d[0], 0, "Version");
  assert.equal(d[1], 1, "OutputChannelCount");
  assert.equal(u16(d, 2), 120, "PreSkip");
  assert.equal(u32(d, 4), 48000, "InputSampleRate");
  assert.equal(u16(d, 8), 0, "OutputGain");
  assert.equal(d[10], 0, "ChannelMappingFamily");
  // A stereo stream with a longer pre-skip and another input rate, big-endian.
  const stereo = initSegment(VIDEO, {
    ...OPUS,
    channels: 2,
    preSkip: 312,
    inputRate: 16000,
  });
  const s = child(
    stereo,
    parseBoxes(
      stereo,
      path(stereo, audioTrak(stereo), ["mdia", "minf", "stbl", "stsd"])!
        .bodyStart + 8,
    )[0],
    "dOps",
    28,
  )!;
  assert.deepEqual(
    [...stereo.subarray(s.bodyStart, s.end)],
    [0, 2, 0x01, 0x38, 0, 0, 0x3e, 0x80, 0, 0, 0],
  );
});

Deno.test("parseInit() and audioCodecString() name the audio codec: opus or mp4a.40.2", () => {
  const opus = parseInit(initSegment(VIDEO, OPUS));
  assert.equal(opus.mime, 'video/mp4; codecs="avc1.42c015, opus"');
  assert.deepEqual(
    opus.tracks.map((t) => [t.kind, t.timescale, t.codec]),
    [["video", 12800, "avc1.42c015"], ["audio", 48000, "opus"]],
  );
  assert.equal(audioCodecString(OPUS), "opus");
  // AAC as before: the esds, the rate as the timescale.
  const aac = parseInit(initSegment(VIDEO, AAC));
  assert.equal(aac.mime, 'video/mp4; codecs="avc1.42c015, mp4a.40.2"');
  assert.equal(aac.tracks[1].timescale, 96000);
  assert.equal(audioCodecString(AAC), "mp4a.40.2");
  assert.equal(audioCodecString({ ...AAC, codec: "aac" }), "mp4a.40.2");
  // An Opus entry without its dOps is not one.
  const broken = initSegment(VIDEO, OPUS);
  const at = new TextDecoder("latin1").decode(broken).indexOf("dOps");
  broken.set(new TextEncoder().encode("free"), at);
  assert.throws(() => parseInit(broken), /without dOps/);
});
