import assert from "node:assert/strict";
import {
  AAC_RATE,
  encoderArgs,
  executableCopy,
  ffmpegPath,
  OPUS_BIT_RATE,
  videoMaxKbps,
} from "../../../lib/render/ffmpeg.ts";

Deno.test("ffmpegPath()", async (t) => {
  await t.step("finds an ffmpeg that runs", async () => {
    const path = await ffmpegPath();
    const out = await new Deno.Command(path, { args: ["-version"] }).output();
    assert.equal(out.success, true);
    assert.match(new TextDecoder().decode(out.stdout), /^ffmpeg version/);
  });

  await t.step("FFMPEG_PATH must name an executable", async () => {
    const dir = await Deno.makeTempDir();
    try {
      const file = `${dir}/not-exec`;
      await Deno.writeTextFile(file, "#!/bin/sh\n");
      await assert.rejects(ffmpegPath(file), /FFMPEG_PATH/);
      await Deno.chmod(file, 0o755);
      assert.equal(await ffmpegPath(file), file);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
});

Deno.test("executableCopy() copies a binary without its executable bit to 0755", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const src = `${dir}/pkg-ffmpeg`;
    await Deno.writeTextFile(src, "#!/bin/sh\necho copied-ok\n");
    await Deno.chmod(src, 0o644);
    const copy = await executableCopy(src, `${dir}/cache`, "ffmpeg-x");
    assert.equal(copy, `${dir}/cache/ffmpeg-x`);
    assert.equal((await Deno.stat(copy)).mode! & 0o777, 0o755);
    const out = await new Deno.Command(copy).output();
    assert.equal(new TextDecoder().decode(out.stdout), "copied-ok\n");
    // Reused on the next call; an executable source is used in place.
    assert.equal(await executableCopy(src, `${dir}/cache`, "ffmpeg-x"), copy);
    await Deno.chmod(src, 0o755);
    assert.equal(await executableCopy(src, `${dir}/cache`, "ffmpeg-x"), src);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("encoderArgs() asks for units the service muxes the moment they are coded", () => {
  const args = encoderArgs(
    { width: 384, height: 384, fps: 25, sampleRate: 48000 },
    "/tmp/v.sock",
    "/tmp/a.sock",
    "/tmp/aac.sock",
  );
  const after = (flag: string, from = 0) => args[args.indexOf(flag, from) + 1];
  assert.equal(after("-g"), "25");
  assert.equal(after("-c:v"), "libx264");
  assert.equal(after("-profile:v"), "baseline");
  assert.equal(after("-f", args.indexOf("-c:v")), "flv");
  assert.ok(args.includes("pipe:1"));
  assert.equal(after("-c:a"), "aac");
  // AAC at 96 kHz, from 96-kHz input: its delay fits inside one video frame.
  assert.equal(after("-ar", args.indexOf("-c:a")), String(AAC_RATE));
  assert.equal(after("-ar"), String(AAC_RATE));
  assert.equal(after("-f", args.indexOf("-c:a")), "adts");
  assert.equal(args[args.length - 1], "unix:/tmp/aac.sock");
  // Nothing probed is dropped: both tracks are timed by count from the first unit.
  assert.equal(args.includes("nobuffer"), false);
});

Deno.test("encoderArgs() for Opus: 48-kHz input, low-delay 20-ms packets, each written as coded", () => {
  const fmt = { width: 384, height: 384, fps: 25, sampleRate: 48000 };
  const args = encoderArgs(
    fmt,
    "/tmp/v.sock",
    "/tmp/a.sock",
    "/tmp/o.sock",
    "opus",
  );
  const after = (flag: string, from = 0) => args[args.indexOf(flag, from) + 1];
  const audio = args.indexOf("-c:a");
  // The video output is the AAC stream's.
  const aac = encoderArgs(fmt, "/tmp/v.sock", "/tmp/a.sock", "/tmp/o.sock");
  const video = (a: string[]) => a.slice(a.indexOf("-map"), a.indexOf("-c:a"));
  assert.deepEqual(video(args), video(aac));
  // The stream's own rate in: no 2× upsampling for Opus.
  assert.equal(after("-ar"), "48000");
  assert.equal(after("-c:a"), "libopus");
  assert.equal(after("-application"), "lowdelay");
  assert.equal(after("-frame_duration"), "20");
  assert.equal(after("-b:a"), String(OPUS_BIT_RATE));
  // NUT, not Ogg (whose muxer holds each page until the next).
  assert.equal(after("-f", audio), "nut");
  assert.equal(after("-flush_packets", audio), "1");
  assert.equal(args[args.length - 1], "unix:/tmp/o.sock");
});

Deno.test("encoderArgs() caps the video bit rate by frame size", () => {
  const cap = (fmt: Parameters<typeof encoderArgs>[0]) => {
    const args = encoderArgs(fmt, "/tmp/v.sock", "/tmp/a.sock", "/tmp/o.sock");
    return [
      args[args.indexOf("-maxrate") + 1],
      args[args.indexOf("-bufsize") + 1],
    ];
  };
  const base = { fps: 25, sampleRate: 48000 };
  assert.deepEqual(cap({ ...base, width: 384, height: 384 }), [
    "1500k",
    "1500k",
  ]);
  assert.deepEqual(cap({ ...base, width: 512, height: 512 }), [
    "2700k",
    "2700k",
  ]);
  assert.deepEqual(
    cap({ ...base, width: 512, height: 512, videoMaxKbps: 2000 }),
    ["2000k", "2000k"],
  );
  assert.equal(videoMaxKbps(512, 512), 2700);
});
