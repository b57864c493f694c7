/**
 * The media socket of a session: token faults refused before the upgrade, activation,
 * turns and frames, takeover, the alpha init. How a session ends or fails on it:
 * ws_teardown_test.ts.
 */
import assert from "node:assert/strict";
import { TestClock } from "../../../../_helpers.ts";
import {
  boxTypes,
  Browser,
  connectActive,
  createSession,
  ENGINE_KEY,
  type Json,
  statusOf,
  withLiveStack,
} from "../../../../lib/media/_live.ts";
import { mintToken } from "../../../../../lib/auth/tokens.ts";
import {
  parseFragment,
  parseInit,
} from "../../../../../lib/render/mp4_parse.ts";
import { parseInitSegment } from "../../../../../client/webcodecs/fmp4.ts";
import { end, live } from "./_helpers.ts";

Deno.test("media socket refuses every token fault with HTTP 401 before the upgrade", async (t) => {
  const clock = new TestClock(Date.now());
  await withLiveStack(
    async (s) => {
      const a = await createSession(s);
      const b = await createSession(s);
      const url = (id: string, token?: string) =>
        `${s.base}/v1/sessions/${id}/ws${
          token === undefined ? "" : `?token=${encodeURIComponent(token)}`
        }`;
      const upgrade = {
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      };
      const cases: [string, string, string][] = [
        ["missing token", url(a.session_id), "AVTR_AUTH_INVALID_KEY"],
        [
          "malformed token",
          url(a.session_id, "not-a-token"),
          "AVTR_AUTH_INVALID_KEY",
        ],
        [
          "forged token",
          url(a.session_id, a.client_token.slice(0, -4) + "AAAA"),
          "AVTR_AUTH_INVALID_KEY",
        ],
        [
          "another session's token",
          url(a.session_id, b.client_token),
          "AVTR_AUTH_INVALID_KEY",
        ],
      ];
      for (const [name, u, code] of cases) {
        await t.step(name, async () => {
          const res = await fetch(u, { headers: upgrade });
          assert.equal(res.status, 401);
          const body = await res.json();
          assert.equal(body.code, code);
          assert.ok(body.request_id);
        });
      }
      await t.step("expired token", async () => {
        clock.advance(5 * 60 * 1000 + 1);
        const res = await fetch(url(a.session_id, a.client_token), {
          headers: upgrade,
        });
        assert.equal(res.status, 401);
        assert.equal((await res.json()).code, "AVTR_AUTH_EXPIRED_TOKEN");
      });
      await t.step("a token of another purpose", async () => {
        const other = mintToken(s.t.app.deps, a.session_id, "render" as never);
        const res = await fetch(url(a.session_id, other.token), {
          headers: upgrade,
        });
        assert.equal(res.status, 401);
        assert.equal((await res.json()).code, "AVTR_AUTH_INVALID_KEY");
      });
      await t.step("no token ever reaches the log", () => {
        for (const line of s.t.log.lines) {
          assert.ok(!line.includes(a.client_token.slice(-20)), line);
        }
      });
    },
    { clock },
  );
});

Deno.test("media socket activates a session: state, init segment, fragments, then active", async () => {
  await live(async (s) => {
    const c = await createSession(s);
    const b = Browser.connect(s, c.session_id, c.stream_metadata.session_token);
    await b.opened;
    const init = await b.message((m) => m.type === "media.init", "media.init");
    assert.match(
      String(init.mime),
      /^video\/mp4; codecs="avc1\.[0-9a-f]{6}, mp4a\.40\.2"$/,
    );
    await b.message(
      (m) => m.type === "session.state" && m.status === "active",
      "active",
    );
    await b.until(() => b.binary.length >= 4, "segments");
    assert.deepEqual(boxTypes(b.binary[0]).slice(0, 2), ["ftyp", "moov"]);
    for (const seg of b.binary.slice(1, 4)) {
      assert.deepEqual(boxTypes(seg), ["moof", "mdat"]);
    }
    // Codecs from the init segment, and per-track timestamps that start near 0 and run on
    // without holes.
    const info = parseInit(b.binary[0]);
    assert.equal(info.mime, init.mime);
    assert.ok(info.hasMvex);
    await b.until(() => b.binary.length >= 12, "a dozen segments");
    const videoId = info.tracks.find((x) => x.kind === "video")!.trackId;
    const next = new Map<number, number>();
    for (const [i, seg] of b.binary.slice(1, 12).entries()) {
      for (const tr of parseFragment(seg).tracks) {
        assert.ok(tr.defaultBaseIsMoof && !tr.hasBaseDataOffset);
        const expected = next.get(tr.trackId);
        if (expected === undefined) {
          const timescale = info.tracks.find((x) =>
            x.trackId === tr.trackId
          )!.timescale;
          assert.ok(tr.baseDecodeTime / timescale < 0.5, "starts near 0");
          if (i === 0 && tr.trackId === videoId) {
            assert.ok(
              tr.firstSampleSync,
              "the first fragment starts on a keyframe",
            );
          }
        } else {
          assert.equal(
            tr.baseDecodeTime,
            expected,
            `track ${tr.trackId} is contiguous`,
          );
        }
        next.set(tr.trackId, tr.baseDecodeTime + tr.duration);
      }
    }
    const states = b.json.filter((m) => m.type === "session.state").map((m) =>
      m.status
    );
    assert.deepEqual(states, ["created", "activating", "active"]);
    const st = await statusOf(s, c.session_id);
    assert.equal(st.status, "active");
    assert.equal(typeof st.started_at, "number");
    const hello = await s.engine.message("session.start");
    assert.equal((hello.user_audio as Json).sample_rate, 24000);
    const peer = await s.engine.peer();
    assert.equal(peer.headers.get("x-engine-key"), ENGINE_KEY);
    b.ws.close();
  });
});

Deno.test("media socket carries text turns, transcripts, audio, interrupt, ping and bad frames", async () => {
  await live(async (s) => {
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token, 2);

    b.send({ type: "text", text: "hello there" });
    const userT = await b.message(
      (m) => m.type === "transcript" && m.role === "user",
      "user transcript",
    );
    assert.equal(userT.text, "hello there");
    assert.equal(userT.final, true);
    const avatarT = await b.message(
      (m) => m.type === "transcript" && m.role === "avatar",
      "avatar transcript",
    );
    assert.equal(avatarT.text, "you said hello there");
    const avatarStart = b.json.find((m) =>
      m.type === "turn.start" && m.role === "avatar"
    )!;
    await b.message(
      (m) => m.type === "turn.end" && m.turn_id === avatarStart.turn_id,
      "avatar turn end",
    );
    assert.equal(avatarT.turn_id, avatarStart.turn_id);
    const peer = await s.engine.peer();
    assert.ok(
      peer.json.some((m) => m.type === "user.text" && m.text === "hello there"),
    );

    b.send({ type: "audio.config", sample_rate: 48000 });
    b.send(new Uint8Array(48000 / 50 * 2 * 10)); // 200 ms at 48 kHz
    await s.engine.waiter.until(
      () => peer.binary.length > 0,
      "user audio at the engine",
    );
    await new Promise((r) => setTimeout(r, 300));
    const samples = peer.binary.reduce((n, f) => n + f.length / 2, 0);
    assert.ok(
      Math.abs(samples - 4800) <= 48,
      `resampled to 24 kHz: ${samples} samples`,
    );

    b.send({ type: "text", text: "long" });
    await b.until(
      () =>
        b.json.filter((m) => m.type === "turn.start" && m.role === "avatar")
          .length === 2,
      "long turn",
    );
    b.send({ type: "interrupt" });
    await s.engine.waiter.until(
      () => peer.json.some((m) => m.type === "interrupt"),
      "interrupt at engine",
    );
    const longTurn = b.json.filter((m) =>
      m.type === "turn.start" && m.role === "avatar"
    )[1];
    await b.message(
      (m) => m.type === "turn.end" && m.turn_id === longTurn.turn_id,
      "interrupted turn ends",
    );

    b.send({ type: "ping" });
    await b.message((m) => m.type === "pong", "pong");
    b.send("{not json");
    b.send({ type: "audio.config", sample_rate: 100 });
    await b.until(
      () =>
        b.json.filter((m) => m.type === "error" && m.code === "invalid_message")
          .length === 2,
      "two invalid_message errors",
    );
    assert.ok(
      b.json.filter((m) => m.type === "error").every((m) => m.fatal === false),
    );

    b.send({ type: "text", text: "fail" });
    await b.message(
      (m) => m.type === "error" && m.code === "tts_failed",
      "per-turn error",
    );
    assert.equal(
      (await statusOf(s, c.session_id)).status,
      "active",
      "the session survives",
    );
    assert.equal(b.closeCode, null);
    b.ws.close();
  });
});

Deno.test("a newer socket takes the session over; the older gets session_already_active and 4000", async () => {
  await live(async (s) => {
    const c = await createSession(s);
    const first = await connectActive(s, c.session_id, c.client_token, 2);
    const second = Browser.connect(
      s,
      c.session_id,
      c.stream_metadata.session_token,
    );
    await second.opened;
    await first.message(
      (m) => m.type === "error" && m.code === "session_already_active",
      "takeover error",
    );
    assert.equal(
      first.json.find((m) => m.code === "session_already_active")!.fatal,
      false,
    );
    assert.equal(await first.closed(), 4000);
    await second.message(
      (m) => m.type === "media.init",
      "media.init on the new socket",
    );
    await second.until(() => second.binary.length >= 3, "new init + segments");
    assert.deepEqual(boxTypes(second.binary[0]).slice(0, 2), ["ftyp", "moov"]);
    assert.equal((await statusOf(s, c.session_id)).status, "active");
    second.close();
  });
});

Deno.test("media.init says alpha stacked for a transparent background, whose video is twice as tall", async (t) => {
  const cases = [
    { bg_id: "transparent", alpha: "stacked", heightPerWidth: 2 },
    { bg_id: "studio", alpha: undefined, heightPerWidth: 1 },
  ];
  for (const c of cases) {
    await t.step(c.bg_id, () =>
      live(async (s) => {
        const created = await createSession(s, ENGINE_KEY, {
          avatar_config: { bg_id: c.bg_id },
        });
        const b = Browser.connect(
          s,
          created.session_id,
          created.stream_metadata.session_token,
        );
        await b.opened;
        const init = await b.message(
          (m) => m.type === "media.init",
          "media.init",
        );
        assert.equal(init.alpha, c.alpha);
        await b.until(() => b.binary.length >= 1, "init segment");
        const video = parseInitSegment(b.binary[0]).find((x) =>
          x.kind === "video"
        )!;
        assert.equal(video.height, c.heightPerWidth * video.width);
        b.ws.close();
        await end(s, created.session_id);
      }));
  }
});
