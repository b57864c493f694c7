import assert from "node:assert/strict";
import { z } from "zod";
import {
  base64Pcm,
  ByteBudget,
  ENGINE_BURST_BYTES,
  ENGINE_BYTES_PER_SECOND,
  engineId,
  INVALID_FRAME_LIMIT,
  INVALID_FRAME_LOG_INTERVAL_MS,
  INVALID_FRAME_WINDOW_MS,
  InvalidFrameCounter,
  MAX_ID_LENGTH,
  MessageSet,
} from "../../../lib/providers/frames.ts";
import { pcmToBase64 } from "../../../lib/providers/resample.ts";

const schemas = {
  "response.start": z.object({ response_id: engineId() }),
  "error": z.object({ fatal: z.boolean().default(false) }),
};

Deno.test("MessageSet.decode() types a message by its type's schema", async (t) => {
  const counted = new MessageSet(schemas, "invalid");
  const ignoring = new MessageSet(schemas, "ignore");
  await t.step(
    "a good message, unknown fields stripped, defaults applied",
    () => {
      assert.deepEqual(
        counted.decode('{"type":"response.start","response_id":"r","x":{}}'),
        { ok: true, msg: { type: "response.start", response_id: "r" } },
      );
      assert.deepEqual(counted.decode('{"type":"error"}'), {
        ok: true,
        msg: { type: "error", fatal: false },
      });
    },
  );
  const cases: [string, string, string][] = [
    ["bad JSON", "{", "bad JSON"],
    ["null", "null", "not a JSON object"],
    ["an array", "[]", "not a JSON object"],
    ["no type", "{}", "no type"],
    ["an object type", '{"type":{"toString":0}}', "no type"],
    [
      "a wrong-typed field",
      '{"type":"response.start","response_id":{"toString":0}}',
      "malformed message",
    ],
    [
      "an id over its bound",
      JSON.stringify({
        type: "response.start",
        response_id: "r".repeat(MAX_ID_LENGTH + 1),
      }),
      "malformed message",
    ],
  ];
  for (const [name, text, reason] of cases) {
    await t.step(`${name} → ${reason}`, () => {
      const d = counted.decode(text);
      assert.ok(!d.ok && !d.ignored);
      assert.equal(d.reason, reason);
    });
  }
  await t.step("an unknown type: invalid or ignored, by the set's rule", () => {
    for (const type of ["surprise", "toString", "__proto__", "constructor"]) {
      const text = JSON.stringify({ type });
      const d = counted.decode(text);
      assert.ok(!d.ok && !d.ignored && d.reason === "unknown type", type);
      assert.deepEqual(ignoring.decode(text), { ok: false, ignored: true });
    }
  });
});

Deno.test("base64Pcm() takes whole little-endian samples only", () => {
  const pcm = new Int16Array([1, -2, 32767, -32768]);
  assert.deepEqual(base64Pcm(pcmToBase64(pcm)), pcm);
  assert.deepEqual(base64Pcm(""), new Int16Array(0));
  assert.equal(base64Pcm(btoa("abc")), null);
  assert.equal(base64Pcm("%%%"), null);
});

Deno.test("InvalidFrameCounter floods past the limit within the window and logs sparsely", () => {
  let t = 0;
  const c = new InvalidFrameCounter(() => t);
  const logs: number[] = [];
  for (let i = 0; i < INVALID_FRAME_LIMIT; i++) {
    const r = c.record();
    assert.equal(r.flood, false);
    if (r.log) logs.push(r.log.suppressed);
    t += 10;
  }
  assert.deepEqual(logs, [0]);
  // Once the window has moved past the first frames, as many more are fine.
  t += INVALID_FRAME_WINDOW_MS;
  const r = c.record();
  assert.equal(r.flood, false);
  assert.deepEqual(r.log, { suppressed: INVALID_FRAME_LIMIT - 1 });
  for (let i = 0; i < INVALID_FRAME_LIMIT - 1; i++) c.record();
  assert.equal(c.record().flood, true);
  assert.equal(c.total, 2 * INVALID_FRAME_LIMIT + 1);
  assert.ok(INVALID_FRAME_LOG_INTERVAL_MS <= INVALID_FRAME_WINDOW_MS);
});

Deno.test("ByteBudget allows a burst, then the sustained rate", () => {
  let t = 0;
  const b = new ByteBudget(() => t);
  assert.equal(b.take(ENGINE_BURST_BYTES), true);
  assert.equal(b.take(1), false);
  t += 500;
  assert.equal(b.take(ENGINE_BYTES_PER_SECOND / 2), true);
  assert.equal(b.take(1), false);
  t += 3_600_000;
  assert.equal(b.take(ENGINE_BURST_BYTES + 1), false);
  assert.equal(b.take(ENGINE_BURST_BYTES), true);
});
