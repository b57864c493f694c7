/**
 * Every provider adapter with typed turns through the whole media plane: the real app on
 * loopback, the vendor's fake on real wss, a browser socket. A typed turn comes back as an
 * avatar turn with a transcript while video flows; microphone audio reaches the vendor.
 * (vendor_b has no typed turns: vendor_b_live_test.ts.)
 */
import assert from "node:assert/strict";
import { authJson, TEST_ADMIN_KEY, testApp } from "../../_helpers.ts";
import type { FakeWs } from "../../fakes/fake_ws.ts";
import { startVendorAFake } from "../../fakes/vendor_a_fake.ts";
import { startVendorCFake } from "../../fakes/vendor_c_fake.ts";
import { connectActive, type LiveStack } from "./_live.ts";

interface Case {
  name: string;
  start(): FakeWs & { heard(): boolean };
  env(fake: FakeWs): Record<string, string>;
  body: Record<string, unknown>;
  reply: RegExp;
}

const cases: Case[] = [
  {
    name: "vendor_a_realtime",
    start() {
      const f = startVendorAFake("ek_live_secret_a1");
      return Object.assign(f, { heard: () => f.appendedSamples() > 0 });
    },
    env: (f) => ({ VENDOR_A_REALTIME_URL: f.url }),
    body: {
      provider_type: "vendor_a_realtime",
      provider_config: {
        vendor_a_realtime: { client_secret: "ek_live_secret_a1" },
      },
    },
    reply: /you said hello/,
  },
  {
    name: "vendor_c",
    start() {
      const f = startVendorCFake();
      return Object.assign(f, { heard: () => f.userSamples() > 0 });
    },
    env: (f) => ({ VENDOR_C_URL: f.url }),
    body: {
      provider_type: "vendor_c",
      provider_config: { vendor_c: { agent_id: "public-agent" } },
    },
    reply: /reply to hello/,
  },
];

for (const c of cases) {
  Deno.test(`${c.name}: a live session through the media socket talks and ends`, async () => {
    const fake = c.start();
    const t = await testApp({
      ALLOW_PRIVATE_NETWORK_TARGETS: "true",
      ...c.env(fake),
    });
    const server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen() {} },
      t.app.handler,
    );
    const stack = { base: `http://127.0.0.1:${server.addr.port}` } as LiveStack;
    try {
      const res = await t.request("/v1/sessions", {
        method: "POST",
        headers: authJson(TEST_ADMIN_KEY),
        body: JSON.stringify(c.body),
      });
      assert.equal(res.status, 200, await res.clone().text());
      const created = await res.json();
      const b = await connectActive(
        stack,
        created.session_id,
        created.client_token,
        3,
      );

      b.send({ type: "text", text: "hello" });
      const said = await b.message(
        (m) =>
          m.type === "transcript" && m.role === "avatar" &&
          c.reply.test(String(m.text)),
        "the avatar's answer",
      );
      assert.equal(typeof said.turn_id, "string");
      await b.message(
        (m) => m.type === "turn.end" && m.turn_id === said.turn_id,
        "turn end",
      );

      b.send({ type: "audio.config", sample_rate: 16000 });
      for (let i = 0; i < 10; i++) b.send(new Uint8Array(640)); // 10 × 20 ms
      await fake.waiter.until(
        () => fake.heard(),
        "microphone audio at the vendor",
      );

      const end = await t.request(`/v1/sessions/${created.session_id}/end`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
      });
      assert.equal(end.status, 200);
      const body = await end.json();
      assert.ok(["ended", "ended_with_warnings"].includes(body.status));
      await b.message((m) => m.type === "session.ended", "session.ended");
      assert.equal(await b.closed(), 1000);
      for (const line of t.log.lines) {
        for (
          const secret of [
            "ek_live_secret_a1",
            created.client_token,
          ]
        ) {
          assert.ok(!line.includes(secret), line);
        }
      }
    } finally {
      await t.close();
      await server.shutdown();
      await fake.close();
    }
  });
}
