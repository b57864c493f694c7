/**
 * The vendor_b adapter's connection against the fake Cartesia agents WebSocket: silence
 * keeps it past the vendor's idle close, a normal close reported as such, a first
 * message that is not `start` closed by the vendor, refused upgrades and bad agent ids
 * failing the start, a token minted with the agent grant. What it speaks:
 * vendor_b_test.ts.
 */
import assert from "node:assert/strict";
import { EngineStartError } from "../../../lib/ports/providers.ts";
import { recordEvents } from "../../fakes/fake_ws.ts";
import { CARTESIA_AGENTS_VERSION } from "../../fakes/vendor_b_fake.ts";
import { startEngine } from "./_helpers.ts";
import {
  AGENT,
  creds,
  delay,
  frames,
  ready,
  setup,
  TOKEN,
} from "./_vendor_b.ts";

Deno.test("vendor_b: silence keeps a quiet connection past the vendor's idle close", async () => {
  const s = setup({ idleMs: 500 }, { keepAliveMs: 100 });
  const events = recordEvents();
  const conn = await ready(s, events);
  try {
    await delay(1500);
    assert.equal(s.fake.idleCloses(), 0);
    assert.deepEqual(events.closes, []);
    const silence = frames(s.fake, "media_input");
    assert.ok(silence.length >= 3, `${silence.length} keep-alives`);
    assert.ok(
      silence.every((m) =>
        /^A+=*$/.test((m.media as { payload: string }).payload)
      ),
    );
  } finally {
    conn.close();
    await s.fake.close();
  }
});

Deno.test("vendor_b: a message just after a keep-alive's turn does not leave the vendor two periods without the next", async () => {
  const keepAliveMs = 500;
  const s = setup({}, { keepAliveMs });
  const conn = await ready(s);
  try {
    // Right after the ack, which armed the first keep-alive.
    conn.sendUserAudio(new Int16Array(160), 16000);
    const from = performance.now();
    await delay(1300);
    const times = [
      ...s.fake.arrivals().filter((t) => t >= from - 50),
      performance.now(),
    ];
    let gap = 0;
    for (let i = 1; i < times.length; i++) {
      gap = Math.max(gap, times[i] - times[i - 1]);
    }
    // (Before: the turn after the audio saw something sent and skipped, and the
    // next silence went up a whole period later: ~1,000 ms after the audio.)
    assert.ok(gap < 1.5 * keepAliveMs, `longest quiet: ${gap.toFixed(0)} ms`);
  } finally {
    conn.close();
    await s.fake.close();
  }
});

Deno.test("vendor_b: the vendor closing normally (1000) is reported as such", async (t) => {
  // The media plane reads it as the agent ending the conversation (provider_ended).
  for (
    const [name, idleMs, hangUp] of [
      ["the vendor's idle close, without keep-alive", 300, false],
      ["the agent ending the call", 30_000, true],
    ] as const
  ) {
    await t.step(name, async () => {
      const s = setup({ idleMs }, { keepAliveMs: 60_000 });
      const events = recordEvents();
      const conn = await ready(s, events);
      try {
        if (hangUp) s.fake.endCall();
        await events.waiter.until(() => events.closes.length > 0, "close");
        assert.equal(s.fake.idleCloses(), hangUp ? 0 : 1);
        assert.deepEqual(events.closes, [{
          clean: false,
          reason: "engine closed the connection",
          code: 1000,
        }]);
      } finally {
        conn.close();
        await s.fake.close();
      }
    });
  }
});

Deno.test("vendor_b: the vendor closes a connection whose first message is not start", async () => {
  const s = setup();
  try {
    const ws = new (WebSocket as unknown as new (
      url: string,
      o: { headers: Record<string, string> },
    ) => WebSocket)(`${s.fake.url}/${encodeURIComponent(AGENT)}`, {
      headers: {
        authorization: `Bearer ${TOKEN}`,
        "cartesia-version": CARTESIA_AGENTS_VERSION,
      },
    });
    const closed = new Promise<number>((resolve) => {
      ws.onclose = (e) => resolve(e.code);
    });
    ws.onopen = () =>
      ws.send(JSON.stringify({
        event: "media_input",
        stream_id: "x",
        media: { payload: "AAAA" },
      }));
    assert.equal(await closed, 1008);
  } finally {
    await s.fake.close();
  }
});

Deno.test("vendor_b: refused upgrades and bad agent ids fail the start", async (t) => {
  const s = setup();
  try {
    for (
      const [name, c, kind] of [
        [
          "a token without the agent grant",
          { ...creds, access_token: "nope" },
          "refused",
        ],
        ["an unknown agent", { ...creds, agent_id: "agent-x" }, "refused"],
        [
          "a dot-segment agent id",
          { ...creds, agent_id: ".." },
          "misconfigured",
        ],
      ] as const
    ) {
      await t.step(name, async () => {
        await assert.rejects(
          startEngine(s.factory, c),
          (e) => e instanceof EngineStartError && e.kind === kind,
        );
      });
    }
  } finally {
    await s.fake.close();
  }
});

Deno.test("vendor_b: a token minted with the agent grant opens the socket", async () => {
  const s = setup({ apiKey: "sk_car_test_key", tokens: [] });
  try {
    // What a customer backend does (docs/providers.md): POST /access-token.
    const res = await fetch(
      `${s.fake.server.origin.replace("wss:", "https:")}/access-token`,
      {
        method: "POST",
        headers: {
          authorization: "Bearer sk_car_test_key",
          "cartesia-version": CARTESIA_AGENTS_VERSION,
          "content-type": "application/json",
        },
        body: JSON.stringify({ grants: { agent: true }, expires_in: 600 }),
      },
    );
    const { token } = await res.json();
    const events = recordEvents();
    const conn = await startEngine(
      s.factory,
      { ...creds, access_token: token },
      {
        events,
      },
    );
    await events.waiter.until(() => events.ready.length > 0, "ready");
    conn.close();
  } finally {
    await s.fake.close();
  }
});
