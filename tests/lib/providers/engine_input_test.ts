/**
 * Engine input is checked before use (DECISIONS 7): against a real fake of each provider,
 * wrong-typed fields, unknown types, bad JSON, oversized and odd-length frames are
 * ignored and counted, the session lives on, and a flood of them fails the session.
 */
import assert from "node:assert/strict";
import {
  ENGINE_BURST_BYTES,
  INVALID_FRAME_LIMIT,
  INVALID_FRAME_WINDOW_MS,
  MAX_ENGINE_FRAME_BYTES,
} from "../../../lib/providers/frames.ts";
import { PROVIDER_TYPES } from "../../../lib/ports/providers.ts";
import { typeKey } from "../../fakes/providers.ts";
import { fieldPaths, withField } from "../../fakes/json_paths.ts";
import { readyEngine } from "./_helpers.ts";

Deno.test("external_engine ignores response.start with a response_id of {toString:0} and lives on", async () => {
  const e = await readyEngine("external_engine");
  try {
    e.peer.sendRaw('{"type":"response.start","response_id":{"toString":0}}');
    await e.sync();
    assert.equal(e.invalid(), 1);
    assert.deepEqual(e.events.starts, []);
    assert.deepEqual(e.events.closes, []);
    // The session still works.
    e.peer.send({ type: "response.start", response_id: "r2" });
    e.peer.send(new Uint8Array(320));
    e.peer.send({ type: "response.end", response_id: "r2" });
    await e.events.waiter.until(() => e.events.ends.length === 1, "end");
    assert.deepEqual(e.events.starts, ["r2"]);
    assert.equal(e.events.audioSamples(), 160);
  } finally {
    await e.close();
  }
});

for (const type of PROVIDER_TYPES) {
  Deno.test(`${type}: {"toString":0} in every typed field of every message type is ignored and counted`, async (t) => {
    const e = await readyEngine(type);
    const key = typeKey(e.kit);
    try {
      for (const tpl of e.kit.templates) {
        for (const path of fieldPaths(tpl.msg)) {
          const typed = path === key || tpl.typed.includes(path);
          await t.step(
            `${tpl.msg[key]} ${path}: ${typed ? "invalid" : "not used"}`,
            async () => {
              // Keep the window from filling: this test is about single frames.
              e.clock.advance(INVALID_FRAME_WINDOW_MS);
              const before = e.invalid();
              e.peer.send(withField(tpl.msg, path, { toString: 0 }));
              await e.sync();
              assert.equal(e.invalid() - before, typed ? 1 : 0);
              assert.deepEqual(e.events.closes, []);
            },
          );
        }
      }
      await t.step("nothing malformed reached the media plane", () => {
        for (const id of [...e.events.starts, ...e.events.ends]) {
          assert.equal(typeof id, "string");
        }
        for (const x of e.events.transcripts) {
          assert.equal(typeof x.text, "string");
          assert.equal(typeof x.final, "boolean");
          assert.ok(x.role === "user" || x.role === "agent");
        }
        for (const x of e.events.errors) {
          assert.equal(typeof x.message, "string");
          assert.equal(x.fatal, false);
        }
        assert.ok(e.events.audio.every((a) => Number.isInteger(a.samples)));
      });
    } finally {
      await e.close();
    }
  });

  Deno.test(`${type}: bad JSON, oversized and misaligned frames are ignored and counted`, async (t) => {
    const e = await readyEngine(type);
    const ecep = type === "external_engine";
    const key = typeKey(e.kit);
    const cases: [string, string | Uint8Array, number][] = [
      ["bad JSON", `{"${key}":"transcript",`, 1],
      ["a JSON array", "[1,2,3]", 1],
      ["a JSON string", '"transcript"', 1],
      ["no type", '{"text":"hi"}', 1],
      ["a numeric type", `{"${key}":7}`, 1],
      ["a prototype key as type", `{"${key}":"toString"}`, ecep ? 1 : 0],
      ["an unknown type", `{"${key}":"surprise.v2"}`, ecep ? 1 : 0],
      [
        "a text frame over the cap",
        JSON.stringify({
          [key]: e.kit.templates[0].msg[key],
          pad: "x".repeat(MAX_ENGINE_FRAME_BYTES),
        }),
        1,
      ],
      [
        "a binary frame over the cap",
        new Uint8Array(MAX_ENGINE_FRAME_BYTES + 2),
        1,
      ],
      [
        e.kit.binaryAudio ? "an odd-length audio frame" : "a binary frame",
        new Uint8Array(321),
        1,
      ],
    ];
    try {
      for (const [name, frame, counted] of cases) {
        await t.step(
          `${name} → ${counted ? "counted" : "ignored"}`,
          async () => {
            const before = e.invalid();
            const audio = e.events.audioSamples();
            e.peer.sendRaw(frame);
            await e.sync();
            assert.equal(e.invalid() - before, counted);
            assert.equal(e.events.audioSamples(), audio);
            assert.deepEqual(e.events.closes, []);
          },
        );
      }
      const audioField = /(^|\.)(delta|audio|audio_base_64|payload)$/;
      const b64 = e.kit.templates.find((x) =>
        x.typed.some((p) => audioField.test(p))
      );
      if (b64) {
        await t.step(
          "base64 audio that is not base64, or odd bytes → counted",
          async () => {
            const field = b64.typed.find((p) => audioField.test(p))!;
            // vendor_a decodes only the current response's audio.
            if (type === "vendor_a_realtime") {
              e.peer.send({
                type: "response.created",
                response: { id: "resp_1" },
              });
            }
            const before = e.invalid();
            e.peer.send(withField(b64.msg, field, "%%%not base64"));
            e.peer.send(withField(b64.msg, field, btoa("abc")));
            await e.sync();
            assert.equal(e.invalid() - before, 2);
          },
        );
      }
      await t.step("no log line quotes a frame", () => {
        for (const line of e.deps.log.lines) {
          assert.doesNotMatch(line, /surprise|xxxxxxxx|not base64/);
        }
      });
    } finally {
      await e.close();
    }
  });
}

Deno.test("external_engine: an odd-length audio frame is dropped whole; the stream stays aligned", async () => {
  const e = await readyEngine("external_engine");
  try {
    e.peer.send({ type: "response.start", response_id: "r" });
    const sample = (v: number) => new Uint8Array(new Int16Array([v]).buffer);
    e.peer.sendRaw(new Uint8Array([0x34, 0x12, 0x01])); // 1.5 samples: dropped
    e.peer.sendRaw(sample(0x0102));
    await e.sync();
    assert.equal(e.invalid(), 1);
    // Exactly the one whole sample of the even frame: no byte carried over.
    assert.deepEqual(e.events.audio.map((a) => a.samples), [1]);
  } finally {
    await e.close();
  }
});

Deno.test("external_engine: frames past the byte budget are refused undecoded and counted", async () => {
  const e = await readyEngine("external_engine");
  try {
    e.peer.send({ type: "response.start", response_id: "r" });
    const frame = new Uint8Array(MAX_ENGINE_FRAME_BYTES);
    const fit = ENGINE_BURST_BYTES / MAX_ENGINE_FRAME_BYTES; // the clock stands still
    for (let i = 0; i < fit + 2; i++) e.peer.sendRaw(frame);
    await e.sync();
    // The text frames before took a few bytes of the burst: one frame less fits.
    assert.equal(e.events.audio.length, fit - 1);
    assert.equal(e.invalid(), 3);
    // Time refills it.
    e.clock.advance(1000);
    e.peer.sendRaw(frame);
    await e.sync();
    assert.equal(e.events.audio.length, fit);
  } finally {
    await e.close();
  }
});

Deno.test("a flood of invalid frames fails the session; the log stays short and quotes nothing", async (t) => {
  await t.step(
    `${INVALID_FRAME_LIMIT} in the window are tolerated`,
    async () => {
      const e = await readyEngine("external_engine");
      try {
        for (let i = 0; i < INVALID_FRAME_LIMIT; i++) {
          e.peer.sendRaw('{"type":"x","secret":"SECRET-IN-FRAME"}');
        }
        await e.sync();
        assert.equal(e.invalid(), INVALID_FRAME_LIMIT);
        assert.deepEqual(e.events.closes, []);
        // The window slides: as many again later are tolerated too.
        e.clock.advance(INVALID_FRAME_WINDOW_MS);
        for (let i = 0; i < INVALID_FRAME_LIMIT; i++) e.peer.sendRaw("{");
        await e.sync();
        assert.deepEqual(e.events.closes, []);
      } finally {
        await e.close();
      }
    },
  );

  for (const type of PROVIDER_TYPES) {
    await t.step(
      `${type}: one more → fatal error, unclean close, socket dropped`,
      async () => {
        const e = await readyEngine(type);
        try {
          const key = typeKey(e.kit);
          for (let i = 0; i <= INVALID_FRAME_LIMIT; i++) {
            e.peer.sendRaw(`{"${key}":7,"secret":"SECRET-IN-FRAME"}`);
          }
          await e.events.waiter.until(
            () => e.events.closes.length > 0,
            "close",
          );
          assert.deepEqual(e.events.errors, [{
            code: "llm_failed",
            fatal: true,
            message: "engine sent too many invalid frames",
          }]);
          assert.equal(e.events.closes[0].clean, false);
          await e.kit.fake.waiter.until(() => e.peer.closed, "socket closed");
          const lines = e.deps.log.lines.filter((l) =>
            l.includes("invalid frame")
          );
          assert.ok(lines.length <= 2, lines.join("\n"));
          for (const line of e.deps.log.lines) {
            assert.doesNotMatch(line, /SECRET-IN-FRAME/);
          }
        } finally {
          await e.close();
        }
      },
    );
  }
});
