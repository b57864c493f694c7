import assert from "node:assert/strict";
import { Encoder, liveEncoderPids } from "../../../lib/render/encoder.ts";
import { ffmpegPath } from "../../../lib/render/ffmpeg.ts";
import { pidExists, poll } from "./_helpers.ts";

const FORMAT = { width: 64, height: 64, fps: 25, sampleRate: 48000 };
const frame = () => new Uint8Array(64 * 64 * 3 / 2).fill(128);
const audio = () => new Uint8Array(1920 * 2);

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("Encoder removes its socket dir once ffmpeg has connected", async () => {
  const inits: Uint8Array[] = [];
  const enc = new Encoder({ ffmpeg: await ffmpegPath(), ...FORMAT }, {
    onInit: (b) => inits.push(b),
    onSegment: () => {},
    onFailure: () => {},
  });
  assert.equal(exists(enc.socketDir), true);
  for (let i = 0; i < 5; i++) enc.write(frame(), audio());
  await poll(() => inits.length === 1 && !exists(enc.socketDir));
  assert.deepEqual(await enc.stop({ graceful: true, timeoutMs: 5000 }), {
    clean: true,
  });
  assert.equal(exists(enc.socketDir), false);
  assert.equal(pidExists(enc.pid), false);
});

Deno.test("Encoder.write() refuses frames beyond its bound; stop kills a stuck encoder", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // An "encoder" that never reads its inputs.
    const stuck = `${dir}/stuck.sh`;
    await Deno.writeTextFile(stuck, "#!/bin/sh\nexec sleep 30\n");
    await Deno.chmod(stuck, 0o755);
    const failures: Error[] = [];
    const enc = new Encoder({ ffmpeg: stuck, ...FORMAT, maxQueuedFrames: 3 }, {
      onInit: () => {},
      onSegment: () => {},
      onFailure: (e) => failures.push(e),
    });
    assert.deepEqual(liveEncoderPids(), [enc.pid]);
    assert.deepEqual([1, 2, 3, 4].map(() => enc.write(frame(), audio())), [
      true,
      true,
      true,
      false,
    ]);
    const r = await enc.stop({ graceful: true, timeoutMs: 100 });
    assert.equal(r.clean, false);
    assert.deepEqual(failures, []);
    assert.equal(pidExists(enc.pid), false);
    assert.equal(exists(enc.socketDir), false);
    assert.deepEqual(liveEncoderPids(), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
