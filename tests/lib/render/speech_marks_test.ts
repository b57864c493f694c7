/**
 * Caption marks in `SpeechTimeline` (lib/render/speech.ts): bounded however many texts an
 * engine sends (an engine that queued 90 s of audio and then sent 80,000 one-letter
 * transcripts once froze the process: every mark walked and spliced the whole queue),
 * and placed where a plain forward walk of the queue places them.
 */
import assert from "node:assert/strict";
import { MAX_MARKS, SpeechTimeline } from "../../../lib/render/speech.ts";
import { AudioQueue, STREAM_RATE } from "../../../lib/render/voice.ts";

const FRAME = 1920;

/** Takes every queued sample, a frame at a time; the marks delivered, as [id, ms]. */
function drain(s: SpeechTimeline, q: AudioQueue, from = 0): number[][] {
  let pos = from;
  while (q.length > 0 || s.queuedMarks > 0) {
    const f = q.take(FRAME);
    s.took(f.samples, f.real, pos);
    pos += FRAME;
  }
  return s.delivered(pos + 1).filter((e) => e.mark !== undefined)
    .map((e) => [e.mark!, e.mediaTimeMs]);
}

Deno.test("SpeechTimeline.mark() keeps at most MAX_MARKS marks; the newest are placed", async (t) => {
  const ids = 80_000;
  await t.step("80,000 texts of one turn after 90 s of its audio", () => {
    const s = new SpeechTimeline();
    const q = new AudioQueue();
    const audio = 90 * STREAM_RATE;
    s.pushed("a", audio);
    q.push(new Int16Array(audio));
    for (let id = 1; id <= ids; id++) s.mark("a", id);
    assert.equal(s.queuedMarks, MAX_MARKS);
    const placed = drain(s, q);
    const ms = Math.round(audio * 1000 / STREAM_RATE);
    assert.deepEqual(
      placed,
      Array.from(
        { length: MAX_MARKS },
        (_, i) => [ids - MAX_MARKS + 1 + i, ms],
      ),
    );
    assert.equal(s.queuedMarks, 0);
  });
  await t.step("80,000 texts each of its own turn (no audio of theirs)", () => {
    const s = new SpeechTimeline();
    const q = new AudioQueue();
    s.pushed("a", STREAM_RATE);
    q.push(new Int16Array(STREAM_RATE));
    for (let id = 1; id <= ids; id++) s.mark(`t${id}`, id);
    assert.equal(s.queuedMarks, MAX_MARKS);
    assert.equal(s.end(`t${ids}`, 0), false);
    // A turn whose mark was dropped has nothing queued: it ends at once.
    assert.equal(s.end("t1", 0), true);
    const placed = drain(s, q);
    assert.equal(placed.length, MAX_MARKS);
    assert.deepEqual(placed[0], [ids - MAX_MARKS + 1, 1000]);
  });
  await t.step("marks into queued audio, interleaved with pushes", () => {
    const s = new SpeechTimeline();
    const q = new AudioQueue();
    for (let id = 1; id <= ids; id++) {
      s.pushed("a", 10);
      q.push(new Int16Array(10));
      s.mark("a", id, id * 10 - 5);
      assert.ok(s.queuedMarks <= MAX_MARKS);
    }
    const placed = drain(s, q);
    assert.equal(placed.length, MAX_MARKS);
    const first = ids - MAX_MARKS + 1;
    assert.deepEqual(placed[0], [
      first,
      Math.round((first * 10 - 5) * 1000 / STREAM_RATE),
    ]);
  });
});

/** The queue as a plain list walked from its head: where each mark should land. */
class Reference {
  runs: { tag: string | undefined; n: number; mark?: number }[] = [];
  taken = new Map<string, number>();
  placed: number[][] = [];

  pushed(tag: string | undefined, n: number) {
    const last = this.runs.at(-1);
    if (last && last.tag === tag && last.mark === undefined) last.n += n;
    else this.runs.push({ tag, n });
  }

  mark(tag: string, id: number, offset?: number) {
    let left = offset === undefined
      ? Infinity
      : offset - (this.taken.get(tag) ?? 0);
    let at = -1;
    for (let i = 0; i < this.runs.length; i++) {
      const r = this.runs[i];
      if (r.tag !== tag || r.mark !== undefined) continue;
      if (left < r.n) {
        if (left > 0) {
          this.runs.splice(i + 1, 0, { tag, n: r.n - left });
          r.n = left;
          at = i + 1;
        } else at = i;
        break;
      }
      left -= r.n;
      at = i + 1;
    }
    if (at < 0) this.runs.push({ tag, n: 0, mark: id });
    else this.runs.splice(at, 0, { tag, n: 0, mark: id });
  }

  took(real: number, pos: number) {
    let off = 0;
    while (this.runs.length > 0) {
      const r = this.runs[0];
      if (r.mark !== undefined) {
        this.runs.shift();
        this.placed.push([
          r.mark,
          Math.round((pos + off) * 1000 / STREAM_RATE),
        ]);
        continue;
      }
      if (off >= real) break;
      const use = Math.min(r.n, real - off);
      if (r.tag !== undefined) {
        this.taken.set(r.tag, (this.taken.get(r.tag) ?? 0) + use);
      }
      off += use;
      r.n -= use;
      if (r.n === 0) this.runs.shift();
    }
  }
}

Deno.test("SpeechTimeline.mark() places marks where a forward walk of the queue does", () => {
  // A small deterministic generator: the same cases on every run.
  let seed = 7;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const tags = ["a", "b", undefined];
  for (let round = 0; round < 200; round++) {
    const s = new SpeechTimeline();
    const q = new AudioQueue();
    const ref = new Reference();
    const pushed = new Map<string, number>();
    let pos = 0;
    let id = 0;
    for (let step = 0; step < 60; step++) {
      const op = rnd(10);
      if (op < 4) {
        const tag = tags[rnd(3)];
        const n = 1 + rnd(3000);
        s.pushed(tag, n);
        ref.pushed(tag, n);
        q.push(new Int16Array(n));
        if (tag) pushed.set(tag, (pushed.get(tag) ?? 0) + n);
      } else if (op < 8) {
        const tag = rnd(2) ? "a" : "b";
        const taken = ref.taken.get(tag) ?? 0;
        const span = (pushed.get(tag) ?? 0) - taken;
        // No offset, or one at or past what was taken (into queued audio or beyond).
        const offset = rnd(3) === 0 ? undefined : taken + rnd(span + 500);
        s.mark(tag, ++id, offset);
        ref.mark(tag, id, offset);
      } else {
        const f = q.take(FRAME);
        s.took(f.samples, f.real, pos);
        ref.took(f.real, pos);
        pos += FRAME;
      }
    }
    while (q.length > 0 || ref.runs.length > 0) {
      const f = q.take(FRAME);
      s.took(f.samples, f.real, pos);
      ref.took(f.real, pos);
      pos += FRAME;
    }
    const got = s.delivered(pos + 1).filter((e) => e.mark !== undefined)
      .map((e) => [e.mark!, e.mediaTimeMs]);
    const byId = (a: number[], b: number[]) => a[1] - b[1] || a[0] - b[0];
    assert.deepEqual(got.sort(byId), ref.placed.sort(byId), `round ${round}`);
  }
});
