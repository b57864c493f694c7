/**
 * A vendor_b session through the whole media plane: the real app on loopback, a fake
 * Cartesia agents WebSocket on real wss (tests/fakes/vendor_b_fake.ts), a browser socket.
 * The customer backend mints the access token with the agent grant; the session goes
 * active on the vendor's `ack`; the user speaks, the agent answers faster than real
 * time and the avatar says it; the user talks over it and the agent's `clear` cuts the
 * avatar (`turn.interrupted`), and so does the browser's interrupt (the rest of that answer
 * is dropped); typed text is refused without ending anything; the agent hanging up ends
 * the session as `provider_ended`.
 */
import assert from "node:assert/strict";
import {
  authJson,
  TEST_ADMIN_KEY,
  type TestApp,
  testApp,
} from "../../_helpers.ts";
import { tone } from "../../fakes/fake_ws.ts";
import {
  CARTESIA_AGENTS_VERSION,
  startVendorBFake,
  type VendorBFake,
  type VendorBFakeOptions,
} from "../../fakes/vendor_b_fake.ts";
import { Browser, type LiveStack } from "./_live.ts";

const API_KEY = "sk_car_live_test_5d2e";
const AGENT = "agent_7";

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `ms` of 16-kHz microphone audio in 20-ms frames, paced in real time. */
async function speak(b: Browser, ms: number, voiced: boolean): Promise<void> {
  for (let i = 0; i < ms / 20; i++) {
    const pcm = voiced ? tone(320, 16000) : new Int16Array(320);
    b.send(new Uint8Array(pcm.buffer));
    await delay(20);
  }
}

/**
 * The app on loopback with `VENDOR_B_URL` on a fresh fake, a vendor_b session created
 * with a token the customer backend minted (docs/providers.md), and its browser socket.
 */
async function withSession(
  fakeOpts: VendorBFakeOptions,
  env: Record<string, string>,
  fn: (
    ctx: { fake: VendorBFake; t: TestApp; b: Browser; token: string },
  ) => Promise<void>,
): Promise<void> {
  const fake = startVendorBFake({
    apiKey: API_KEY,
    agents: [AGENT],
    ...fakeOpts,
  });
  const t = await testApp({
    ALLOW_PRIVATE_NETWORK_TARGETS: "true",
    VENDOR_B_URL: fake.url,
    ...env,
  });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    t.app.handler,
  );
  const stack = { base: `http://127.0.0.1:${server.addr.port}` } as LiveStack;
  try {
    const minted = await fetch(
      `${fake.server.origin.replace("wss:", "https:")}/access-token`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${API_KEY}`,
          "cartesia-version": CARTESIA_AGENTS_VERSION,
          "content-type": "application/json",
        },
        body: JSON.stringify({ grants: { agent: true }, expires_in: 600 }),
      },
    );
    const { token } = await minted.json();
    const res = await t.request("/v1/sessions", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
      body: JSON.stringify({
        provider_type: "vendor_b",
        provider_config: { vendor_b: { access_token: token, agent_id: AGENT } },
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const created = await res.json();
    const b = Browser.connect(stack, created.session_id, created.client_token);
    await b.opened;
    try {
      await fn({ fake, t, b, token });
    } finally {
      b.close();
    }
  } finally {
    await t.close();
    await server.shutdown();
    await fake.close();
  }
}

Deno.test("vendor_b: a live session starts on ack, talks, is cut by the agent's clear, ends with the call", async () => {
  await withSession({ replyMs: 3000 }, {}, async ({ fake, t, b, token }) => {
    await b.message(
      (m) => m.type === "session.state" && m.status === "active",
      "active",
    );
    await b.until(() => b.binary.length >= 3, "media segments");
    assert.equal(fake.peers[0].json[0].event, "start");

    // Typed text: refused, non-fatal; the session lives on.
    b.send({ type: "text", text: "hello" });
    await b.message(
      (m) =>
        m.type === "error" && m.code === "invalid_message" && m.fatal === false,
      "invalid_message",
    );
    assert.ok(!b.json.some((m) => m.type === "transcript"));

    // The user speaks, then pauses: the agent answers (3 s of audio sent in 0.3 s).
    b.send({ type: "audio.config", sample_rate: 16000 });
    await speak(b, 300, true);
    await speak(b, 400, false);
    const start = await b.message(
      (m) => m.type === "turn.start" && m.role === "avatar",
      "the avatar's turn",
    );
    await b.message(
      (m) =>
        m.type === "avatar.speaking" && m.speaking === true &&
        m.turn_id === start.turn_id,
      "the avatar speaking",
    );
    // The reply needed the speech and 300 ms of the pause at the vendor.
    assert.ok(fake.userSamples() >= 16000 * 0.6 - 10);

    // The user talks over it: the agent's clear cuts the avatar.
    await speak(b, 200, true);
    const cut = await b.message(
      (m) => m.type === "turn.interrupted" && m.turn_id === start.turn_id,
      "turn.interrupted",
    );
    assert.equal(typeof cut.played_ms, "number");
    assert.ok((cut.played_ms as number) < 3000, `played ${cut.played_ms}`);
    await b.message(
      (m) => m.type === "turn.end" && m.turn_id === start.turn_id,
      "turn.end",
    );

    // The browser interrupts the next answer: cut locally, the rest of it dropped
    // (the vendor has no cancel; it streams on), so no further avatar turn opens.
    await speak(b, 300, true);
    await speak(b, 400, false);
    const next = await b.message(
      (m) =>
        m.type === "avatar.speaking" && m.speaking === true &&
        m.turn_id !== start.turn_id,
      "the next answer",
    );
    b.send({ type: "interrupt" });
    await b.message(
      (m) => m.type === "turn.interrupted" && m.turn_id === next.turn_id,
      "turn.interrupted by the browser",
    );
    while (fake.streaming()) await delay(20);
    await delay(300);
    const avatarTurns = b.json.filter((m) =>
      m.type === "turn.start" && m.role === "avatar"
    );
    assert.equal(avatarTurns.length, 2, JSON.stringify(avatarTurns));
    // Once the agent has been quiet a while (1 s), its next answer is heard at once,
    // not taken for the rest of the cut one (which would have run 3 s).
    await delay(1000);
    await speak(b, 300, true);
    await speak(b, 400, false);
    await b.message(
      (m) =>
        m.type === "avatar.speaking" && m.speaking === true &&
        m.turn_id !== start.turn_id && m.turn_id !== next.turn_id,
      "the answer after the cut",
    );

    // The agent hangs up (close 1000): the session ends as provider_ended.
    fake.endCall();
    const ended = await b.message(
      (m) => m.type === "session.ended",
      "session.ended",
    );
    assert.equal(ended.reason, "provider_ended");
    for (const line of t.log.lines) {
      assert.ok(!line.includes(token), line);
      assert.ok(!line.includes(API_KEY), line);
    }
  });
});

Deno.test("vendor_b: activation waits for the agent's ack, bounded by the start timeout", async () => {
  await withSession(
    { ack: false },
    { START_TIMEOUT_MS: "1500" },
    async ({ fake, b }) => {
      const ended = await b.message(
        (m) => m.type === "session.ended",
        "session.ended",
      );
      assert.equal(ended.reason, "start_failed");
      assert.equal(fake.peers[0].json[0].event, "start");
      assert.ok(
        !b.json.some((m) =>
          m.type === "session.state" && m.status === "active"
        ),
      );
    },
  );
});
