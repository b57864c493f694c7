import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { ffmpegPath } from "../../../lib/render/ffmpeg.ts";
import {
  crc32Mpeg,
  NutOpusReader,
  type OpusHead,
  opusPacketSamples,
} from "../../../lib/render/nut_opus.ts";

/** Runs ffmpeg with `args`; answers its stdout. */
async function ffmpeg(args: string[], input?: Uint8Array): Promise<Uint8Array> {
  const child = new Deno.Command(await ffmpegPath(), {
    args: ["-hide_banner", "-v", "error", ...args],
    stdin: input ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.output();
  if (input) {
    const w = child.stdin.getWriter();
    await w.write(input);
    await w.close();
  }
  const out = await output;
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return out.stdout;
}

/** `seconds` of a 440-Hz tone as Opus in NUT, as the encoder's ffmpeg writes it. */
function opusNut(seconds: number, bitRate = "48k", codec = "libopus") {
  return ffmpeg([
    "-f",
    "lavfi",
    "-i",
    `sine=frequency=440:sample_rate=48000:duration=${seconds}`,
    "-c:a",
    codec,
    ...(codec === "libopus"
      ? ["-application", "lowdelay", "-frame_duration", "20"]
      : []),
    "-b:a",
    bitRate,
    "-f",
    "nut",
    "pipe:1",
  ]);
}

/** What ffmpeg's own NUT demuxer finds in `nut`: each packet's size and MD5. */
async function demuxed(nut: Uint8Array): Promise<string[]> {
  const md5 = await ffmpeg(
    ["-f", "nut", "-i", "pipe:0", "-c", "copy", "-f", "framemd5", "pipe:1"],
    nut,
  );
  return new TextDecoder().decode(md5).split("\n")
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => l.split(",").map((f) => f.trim()))
    .map((f) => `${f[4]} ${f[5]}`);
}

function read(nut: Uint8Array, cuts: (at: number) => number) {
  const heads: OpusHead[] = [];
  const packets: string[] = [];
  const r = new NutOpusReader({
    onHead: (h) => heads.push(h),
    onPacket: (p) =>
      packets.push(
        `${p.length} ${createHash("md5").update(p).digest("hex")}`,
      ),
  });
  for (let at = 0; at < nut.length;) {
    const next = Math.min(nut.length, at + cuts(at));
    r.push(nut.subarray(at, next));
    at = next;
  }
  return { heads, packets };
}

Deno.test("NutOpusReader gives ffmpeg's packets however the bytes are cut", async () => {
  // 256 kbit/s for 3 s: past NUT's 32-KiB syncpoint distance, so syncpoints (and the
  // info packets) sit between frames, and the stream ends with an index.
  const nut = await opusNut(3, "256k");
  const want = await demuxed(nut);
  assert.equal(want.length, 151); // 150 frames of 20 ms and the encoder's flush
  const syncpoints = new TextDecoder("latin1").decode(nut)
    .split("NK\xe4\xad\xee\xca\x45\x69").length - 1;
  assert.ok(syncpoints >= 3, `${syncpoints} syncpoints`);
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 300 + 1;
  for (const cuts of [() => 1, () => 3, () => 7, () => 4096, random]) {
    const { heads, packets } = read(nut, cuts);
    assert.deepEqual(heads, [{
      channels: 1,
      preSkip: 120,
      inputRate: 48000,
      outputGain: 0,
      mappingFamily: 0,
    }]);
    assert.deepEqual(packets, want);
  }
});

Deno.test("NutOpusReader hands a packet on the moment its last byte arrives", async () => {
  const nut = await opusNut(0.2);
  const packets: Uint8Array[] = [];
  const r = new NutOpusReader({
    onHead: () => {},
    onPacket: (p) => packets.push(p),
  });
  // Byte by byte: each packet comes out with the byte that ends it, never later.
  for (let i = 0; i < nut.length; i++) {
    const before = packets.length;
    r.push(nut.subarray(i, i + 1));
    if (packets.length === before) continue;
    assert.equal(packets.length, before + 1);
    const p = packets[before];
    assert.deepEqual(p, nut.subarray(i + 1 - p.length, i + 1));
  }
  assert.equal(packets.length, 11); // 10 frames of 20 ms and the encoder's flush
});

Deno.test("NutOpusReader refuses what ffmpeg does not write", async () => {
  const nut = await opusNut(0.2);
  const push = (bytes: Uint8Array) => () =>
    new NutOpusReader({ onHead() {}, onPacket() {} }).push(bytes);
  // Not NUT at all (an Ogg page's start).
  assert.throws(
    push(new TextEncoder().encode("OggS".padEnd(40, "\0"))),
    /not NUT/,
  );
  // A byte of the main header changed: its checksum no longer matches.
  const bad = nut.slice();
  bad[40] ^= 0x01;
  assert.throws(push(bad), /checksum/);
  // An unknown startcode.
  const unknown = nut.slice();
  unknown[26] ^= 0x10; // the second byte of the main startcode
  assert.throws(push(unknown), /unknown NUT startcode/);
  // Another codec in NUT.
  assert.throws(push(await opusNut(0.2, "64k", "pcm_s16le")), /not Opus/);
  // A frame before the headers.
  const id = new TextEncoder().encode("nut/multimedia container\0");
  assert.throws(push(new Uint8Array([...id, 0x00, 0x00])), /before headers/);
  // A frame code ffmpeg's table leaves invalid (0).
  const headers = nut.subarray(0, firstFrame(nut));
  assert.throws(
    push(new Uint8Array([...headers, 0x00])),
    /invalid NUT frame code/,
  );
  // A frame whose header never ends (code 1 codes its flags: here an endless list of
  // reserved fields): refused once more than a unit's worth is buffered.
  const r = new NutOpusReader({ onHead() {}, onPacket() {} });
  r.push(headers);
  r.push(new Uint8Array([0x01, 0x81, 0x00, 0xff, 0xff, 0xff, 0x7f]));
  assert.throws(() => {
    for (let i = 0; i < 20; i++) r.push(new Uint8Array(8192));
  }, /too large/);
});

/** Where the first frame starts: after the last startcode packet before it. */
function firstFrame(nut: Uint8Array): number {
  const text = new TextDecoder("latin1").decode(nut);
  // The stream's first syncpoint immediately precedes its first frame.
  const sp = text.indexOf("NK\xe4\xad\xee\xca\x45\x69");
  const size = nut[sp + 8]; // forward pointer: one byte for a syncpoint
  return sp + 9 + size;
}

Deno.test("crc32Mpeg() and opusPacketSamples()", () => {
  // CRC-32/MPEG-2 check value (poly 0x04C11DB7, init 0 here, no final xor): "123456789".
  assert.equal(crc32Mpeg(new TextEncoder().encode("123456789")), 0x89a1897f);
  // TOC: config 31 (CELT FB 20 ms), one frame; config 28 (CELT FB 2.5 ms) ×2; config
  // 1 (SILK NB 20 ms), code 3 with 3 frames; config 3 (SILK 60 ms).
  assert.equal(opusPacketSamples(new Uint8Array([31 << 3])), 960);
  assert.equal(opusPacketSamples(new Uint8Array([(28 << 3) | 1])), 240);
  assert.equal(opusPacketSamples(new Uint8Array([(1 << 3) | 3, 3])), 2880);
  assert.equal(opusPacketSamples(new Uint8Array([3 << 3])), 2880);
  assert.equal(opusPacketSamples(new Uint8Array(0)), 0);
});
