/**
 * The render worker protocol at the wire level (docs/render-worker.md), spoken by a raw
 * client against the reference worker (built-in renderer): what a neural renderer
 * implementing the protocol must do too.
 */
import assert from "node:assert/strict";
import { parseInitSegment } from "../../../client/webcodecs/fmp4.ts";
import { liveEncoderPids } from "../../../lib/render/encoder.ts";
import { parseBoxes } from "../../../lib/render/mp4_boxes.ts";
import { parseInit } from "../../../lib/render/mp4_parse.ts";
import {
  assertNoEncoders,
  startWorker,
  timelines,
  tone,
  WORKER_TOKEN,
} from "./_helpers.ts";

const TOKEN = WORKER_TOKEN;
const AUTH = { authorization: `Bearer ${TOKEN}` };

const DenoWebSocket = WebSocket as unknown as new (
  url: string,
  init: { headers: Record<string, string> },
) => WebSocket;

/** A stream socket that records its messages in order and how it closed. */
class RawStream {
  texts: unknown[] = [];
  binaries: Uint8Array[] = [];
  order: Array<"text" | "binary"> = [];
  closed = Promise.withResolvers<{ code: number; reason: string }>();
  #waiters: Array<() => void> = [];
  readonly ws: WebSocket;

  constructor(url: string) {
    this.ws = new DenoWebSocket(url.replace(/^http/, "ws"), { headers: AUTH });
    this.ws.binaryType = "arraybuffer";
    this.ws.onmessage = (e) => {
      if (typeof e.data === "string") {
        this.texts.push(JSON.parse(e.data));
        this.order.push("text");
      } else {
        this.binaries.push(new Uint8Array(e.data as ArrayBuffer));
        this.order.push("binary");
      }
      for (const w of this.#waiters.splice(0)) w();
    };
    this.ws.onclose = (e) => {
      this.closed.resolve({ code: e.code, reason: e.reason });
      for (const w of this.#waiters.splice(0)) w();
    };
  }

  async until(ok: () => boolean, ms = 10_000): Promise<void> {
    const end = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > end) throw new Error("timed out waiting for the stream");
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 100);
      });
    }
  }
}

Deno.test("render worker protocol, spoken by a raw client", async (t) => {
  const worker = startWorker();
  const call = async (method: string, path: string, body?: BodyInit) => {
    const res = await fetch(`${worker.url}${path}`, {
      method,
      headers: AUTH,
      body,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const open = async () => {
    const r = await call(
      "POST",
      "/v1/render/sessions",
      JSON.stringify({ session_id: "s-1", avatar_id: "ava", bg_id: "studio" }),
    );
    assert.equal(r.status, 201);
    return `/v1/render/sessions/${r.body.id}`;
  };
  try {
    await t.step(
      "a stream: init text, init segment, then one moof+mdat a frame from 0",
      async () => {
        const path = await open();
        const s = new RawStream(`${worker.url}${path}/stream`);
        await s.until(() => s.binaries.length >= 12);
        assert.deepEqual(s.order.slice(0, 3), ["text", "binary", "binary"]);
        const msg = s.texts[0] as { type: string; mime: string };
        assert.equal(msg.type, "init");
        assert.match(
          msg.mime,
          /^video\/mp4; codecs="avc1\.[0-9a-f]{6}, mp4a\.40\.2"$/,
        );
        const [init, ...segments] = s.binaries;
        assert.deepEqual(parseBoxes(init).map((b) => b.type), ["ftyp", "moov"]);
        assert.equal(parseInit(init).hasMvex, true);
        for (const seg of segments) {
          assert.deepEqual(parseBoxes(seg).map((b) => b.type), [
            "moof",
            "mdat",
          ]);
        }
        // No audio was posted: the stream still runs (silence), one video frame a
        // segment, both tracks contiguous from 0, the first video sample a keyframe.
        const lines = timelines(init, segments);
        const video = lines.get(1)!;
        assert.equal(video[0].sync, true);
        assert.equal(video[0].start, 0);
        for (let i = 1; i < video.length; i++) {
          assert.equal(
            video[i].start,
            video[i - 1].start + video[i - 1].duration,
          );
          assert.equal(video[i].duration, 512); // 40 ms at 12,800 Hz
        }
        // Audio starts at 0 or just after it (less than one AAC frame).
        const audio = lines.get(2)!;
        assert.ok(audio[0].start < 1024, `audio starts at ${audio[0].start}`);
        // Audio posted while streaming is accepted (PCM16LE at any 8–48 kHz rate).
        const pcm = tone(0.2, 16000);
        assert.equal(
          (await call(
            "POST",
            `${path}/audio?sample_rate=16000`,
            new Uint8Array(pcm.buffer as ArrayBuffer),
          )).status,
          204,
        );
        // DELETE answers once stopped; the stream socket is then closed with 1000.
        const stopped = await call(
          "DELETE",
          `${path}?graceful=true&timeout_ms=2000`,
        );
        assert.equal(stopped.status, 200);
        assert.equal(stopped.body.clean, true);
        assert.ok(stopped.body.segments_rendered >= segments.length);
        assert.equal((await s.closed.promise).code, 1000);
        assertNoEncoders();
      },
    );

    await t.step(
      "a newer stream socket takes over (4000); each stream starts over with its own init",
      async () => {
        const path = await open();
        const a = new RawStream(`${worker.url}${path}/stream`);
        await a.until(() => a.binaries.length >= 3);
        const encoders = liveEncoderPids();
        const b = new RawStream(`${worker.url}${path}/stream`);
        assert.equal((await a.closed.promise).code, 4000);
        await b.until(() => b.binaries.length >= 3);
        assert.equal((b.texts[0] as { type: string }).type, "init");
        const video = timelines(b.binaries[0], b.binaries.slice(1)).get(1)!;
        assert.equal(video[0].start, 0);
        assert.equal(video[0].sync, true);
        // Closing the socket detaches: the session and its one encoder stay.
        b.ws.close();
        await b.closed.promise;
        assert.deepEqual(liveEncoderPids(), encoders);
        assert.equal((await call("GET", path)).status, 200);
        assert.equal((await call("DELETE", path)).status, 200);
        assertNoEncoders();
      },
    );

    await t.step(
      "?audio=opus: the stream's audio is Opus; any other codec is refused",
      async () => {
        const path = await open();
        const s = new RawStream(`${worker.url}${path}/stream?audio=opus`);
        await s.until(() => s.binaries.length >= 2);
        const init = s.texts[0] as { type: string; mime: string };
        assert.match(init.mime, /, ?opus"/);
        const audio = parseInitSegment(s.binaries[0]).find((x) =>
          x.kind === "audio"
        )!;
        assert.equal(audio.codec, "opus");
        s.ws.close();
        await s.closed.promise;
        const bad = await fetch(`${worker.url}${path}/stream?audio=mp3`, {
          headers: {
            ...AUTH,
            upgrade: "websocket",
            connection: "Upgrade",
            "sec-websocket-version": "13",
            "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          },
        });
        assert.equal(bad.status, 400);
        assert.equal((await bad.json()).error, "invalid");
        assert.equal((await call("DELETE", path)).status, 200);
        assertNoEncoders();
      },
    );

    await t.step(
      "a failed stream: an error text, then close 1011",
      async () => {
        const path = await open();
        const s = new RawStream(`${worker.url}${path}/stream`);
        await s.until(() => s.binaries.length >= 2);
        const [pid] = liveEncoderPids();
        Deno.kill(pid, "SIGKILL");
        const closed = await s.closed.promise;
        assert.equal(closed.code, 1011);
        const last = s.texts[s.texts.length - 1] as {
          type: string;
          message: string;
        };
        assert.equal(last.type, "error");
        assert.equal(typeof last.message, "string");
        assert.equal((await call("DELETE", path)).status, 200);
        assertNoEncoders();
      },
    );

    await t.step(
      "requests that do not fit the protocol are refused",
      async () => {
        const sessions = "/v1/render/sessions";
        const bad = await call("POST", sessions, "{");
        assert.deepEqual(bad.body.error, "invalid");
        assert.equal(bad.status, 400);
        assert.equal(
          (await call("POST", sessions, JSON.stringify({ session_id: "x" })))
            .status,
          400,
        );
        const unknown = await call(
          "POST",
          sessions,
          JSON.stringify({
            session_id: "x",
            avatar_id: "nobody",
            bg_id: "studio",
          }),
        );
        assert.deepEqual([unknown.status, unknown.body.error], [
          400,
          "misconfigured",
        ]);
        assert.equal((await call("GET", sessions)).status, 405);
        assert.equal((await call("GET", `${sessions}/nope`)).status, 404);
        assert.equal((await call("DELETE", `${sessions}/nope`)).status, 404);
        const path = await open();
        assert.equal((await call("GET", `${path}/stream`)).status, 400); // no upgrade
        assert.equal((await call("PUT", `${path}/audio`)).status, 405);
        assert.equal(
          (await call("POST", `${path}/audio?sample_rate=96000`, "xx")).status,
          400,
        );
        assert.equal((await call("DELETE", path)).status, 200);
      },
    );

    await t.step(
      "the user speaking (listen) and a caption's text (mark body) are taken, checked",
      async () => {
        const path = await open();
        for (const q of ["true", "false"]) {
          const r = await call("POST", `${path}/listen?speaking=${q}`);
          assert.equal(r.status, 204);
        }
        for (const q of ["", "?speaking=yes", "?speaking=1"]) {
          const r = await call("POST", `${path}/listen${q}`);
          assert.deepEqual([r.status, r.body.error], [400, "invalid"]);
        }
        const mark = `${path}/mark?tag=turn_1&id=1`;
        const text = JSON.stringify({ text: "Is that so?" });
        assert.equal((await call("POST", mark, text)).status, 204);
        for (
          const body of [
            "{",
            JSON.stringify({ text: 5 }),
            JSON.stringify({ text: "x".repeat(1001) }),
          ]
        ) {
          const r = await call("POST", mark, body);
          assert.deepEqual([r.status, r.body.error], [400, "invalid"]);
        }
        assert.equal((await call("DELETE", path)).status, 200);
      },
    );
  } finally {
    await worker.close();
  }
});
