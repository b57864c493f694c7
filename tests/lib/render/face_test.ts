import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { AVATARS, BACKGROUNDS } from "../../../lib/avatars.ts";
import { createFrame, drawAvatar } from "../../../lib/render/draw.ts";
import { FaceDriver, type FaceState } from "../../../lib/render/face.ts";
import { VisemeClassifier, VISEMES } from "../../../lib/render/visemes.ts";
import { FRAME_SAMPLES, loadSet } from "../../../scripts/lipsync/set.ts";
import { tone } from "./_helpers.ts";

const SILENCE = new Int16Array(FRAME_SAMPLES);

/** Words: 320 ms of a voiced tone, 120 ms of silence, for `seconds`. */
function words(seconds: number): Int16Array[] {
  const out: Int16Array[] = [];
  for (let k = 0; k < seconds * 25; k++) {
    out.push(
      k % 11 < 8 ? tone(0.04, 48000, 180 + (k % 5) * 40, 12000) : SILENCE,
    );
  }
  return out;
}

/** Hash of every frame drawn for `audio` by a driver seeded `seed`. */
function frameHashes(seed: number, audio: Int16Array[], size = 128): string[] {
  const face = new FaceDriver(seed);
  return audio.map((a) => {
    const f = createFrame(size, size);
    drawAvatar(f, AVATARS[0], BACKGROUNDS[0], face.next(a));
    return createHash("sha1").update(f.data).digest("hex");
  });
}

Deno.test("FaceDriver", async (t) => {
  await t.step(
    "frames are deterministic for a seed and differ between seeds",
    () => {
      const audio = [...words(3), ...new Array(75).fill(SILENCE)];
      const a = frameHashes(1234, audio);
      assert.deepEqual(frameHashes(1234, audio), a);
      const b = frameHashes(99, audio);
      const differ = a.filter((h, i) => h !== b[i]).length;
      assert.ok(differ > audio.length / 2, `${differ} frames differ`);
    },
  );

  await t.step(
    "blinks come every few seconds, never in the middle of a word",
    () => {
      const face = new FaceDriver(7);
      const audio = [...words(40), ...new Array(25 * 20).fill(SILENCE)];
      let blinks = 0;
      let prevBlink = 0;
      for (let k = 0; k < audio.length; k++) {
        const s = face.next(audio[k]);
        if (s.blink > 0 && prevBlink === 0) {
          blinks++;
          // It starts in a gap between words.
          assert.equal(
            audio[k],
            SILENCE,
            `a blink started mid-word at frame ${k}`,
          );
        }
        prevBlink = s.blink;
      }
      // 60 s at one blink every 2.5–5.5 s (held to word gaps while speaking).
      assert.ok(blinks >= 10 && blinks <= 26, `${blinks} blinks`);
    },
  );

  await t.step("a stressed syllable lifts the brows and nods the head", () => {
    const face = new FaceDriver(3);
    for (let k = 0; k < 25; k++) face.next(SILENCE);
    const before = structuredClone(face.state) as FaceState;
    let maxBrow = 0;
    let maxNod = -1;
    for (let k = 0; k < 4; k++) {
      const s = face.next(tone(0.04, 48000, 220, 20000));
      maxBrow = Math.max(maxBrow, s.brow);
      maxNod = Math.max(maxNod, s.head.y - before.head.y);
    }
    assert.ok(before.brow < 0.1, `brow at rest ${before.brow}`);
    assert.ok(maxBrow > 0.7, `brow ${maxBrow}`);
    assert.ok(maxNod > 0.005, `nod ${maxNod}`);
  });

  await t.step("closeMouth() shuts the mouth on the next quiet frame", () => {
    const speak = (face: FaceDriver) => {
      for (let k = 0; k < 10; k++) face.next(tone(0.04, 48000, 220, 20000));
    };
    const cut = new FaceDriver(4);
    speak(cut);
    assert.ok(cut.state.mouth.open > 0.2, `open ${cut.state.mouth.open}`);
    cut.closeMouth();
    assert.equal(cut.next(SILENCE).mouth.open, 0);
    // Left to itself the mouth is still closing a frame later.
    const free = new FaceDriver(4);
    speak(free);
    assert.ok(free.next(SILENCE).mouth.open > 0.02);
  });

  await t.step("the gaze shifts now and then while idle", () => {
    const face = new FaceDriver(11);
    const seen = new Set<string>();
    for (let k = 0; k < 25 * 20; k++) {
      const g = face.next(SILENCE).gaze;
      seen.add(`${g.x.toFixed(1)},${g.y.toFixed(1)}`);
    }
    assert.ok(seen.size >= 4, `${seen.size} gaze positions`);
  });

  await t.step(
    "speech moves the mouth through several visemes; silence closes it",
    async () => {
      const [u] = await loadSet();
      const face = new FaceDriver(5);
      const shown = new Set<string>();
      for (let k = 0; k < u.labels.length; k++) {
        face.next(u.pcm.subarray(k * FRAME_SAMPLES, (k + 1) * FRAME_SAMPLES));
        shown.add(VISEMES[face.viseme]);
      }
      assert.ok(shown.size >= 6, `visemes shown: ${[...shown]}`);
      for (let k = 0; k < 15; k++) face.next(SILENCE);
      assert.equal(VISEMES[face.viseme], "sil");
      assert.ok(face.state.mouth.open < 0.01);
    },
  );

  await t.step(
    "with the next frame's audio, the lips close toward a p, b or m a frame early",
    () => {
      // A classifier that hears "aa" in every frame but the marked ones (a closure).
      const MARK = 7777;
      const PP = VISEMES.indexOf("PP"), AA = VISEMES.indexOf("aa");
      class Scripted extends VisemeClassifier {
        calls = 0;
        override classify(s: Int16Array, _db: number, out: Float64Array) {
          this.calls++;
          out.fill(0);
          out[s[0] === MARK ? PP : AA] = 1;
          return out;
        }
      }
      const vowel = tone(0.04, 48000, 200, 12000);
      const closure = vowel.slice();
      closure[0] = MARK;
      const audio = [...Array(6).fill(vowel), closure, closure, vowel, vowel];
      const run = (look: boolean) => {
        const c = new Scripted();
        const face = new FaceDriver(9, 25, c);
        const open = audio.map((a, k) =>
          face.next(a, look ? audio[k + 1] : undefined).mouth.open
        );
        return { open, calls: c.calls };
      };
      const plain = run(false), ahead = run(true);
      // Each frame is classified once either way (a tick early with the look-ahead).
      assert.equal(plain.calls, audio.length);
      assert.equal(ahead.calls, audio.length);
      assert.deepEqual(ahead.open.slice(0, 5), plain.open.slice(0, 5));
      assert.ok(
        ahead.open[5] < plain.open[5] * 0.85,
        `the frame before the closure: ${ahead.open[5]} vs ${plain.open[5]}`,
      );
      assert.equal(ahead.open[6], 0);
      assert.equal(plain.open[6], 0);

      // The queued audio was cut after the peek: the frame that comes is classified
      // for itself, not taken for the closure that was peeked.
      const c = new Scripted();
      const face = new FaceDriver(9, 25, c);
      for (let k = 0; k < 5; k++) face.next(vowel, vowel);
      face.next(vowel, closure);
      const calls = c.calls;
      face.next(vowel, vowel);
      assert.equal(c.calls, calls + 2);
      assert.equal(VISEMES[face.viseme], "aa");
    },
  );
});
