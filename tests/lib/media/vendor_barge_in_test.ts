/**
 * Barge-in on a vendor engine through the whole media plane (the real app on loopback,
 * the vendor's fake on real wss, a browser socket): the OpenAI Realtime fake streams a
 * 4-s answer at once and is done with it long before the avatar has said it; the user
 * starts talking 1.5 s later. The avatar is cut there and the item truncated at exactly
 * what the browser was streamed.
 */
import assert from "node:assert/strict";
import { authJson, TEST_ADMIN_KEY, testApp } from "../../_helpers.ts";
import {
  startVendorAFake,
  STORY_BARGE_IN_MS,
  STORY_MS,
} from "../../fakes/vendor_a_fake.ts";
import { type Browser, connectActive, type LiveStack } from "./_live.ts";

const SECRET = "ek_barge_in_secret_a1";

Deno.test("vendor_a_realtime: speech 1.5 s after response.done cuts the avatar and truncates at played_ms", async () => {
  const fake = startVendorAFake(SECRET);
  const t = await testApp({
    ALLOW_PRIVATE_NETWORK_TARGETS: "true",
    VENDOR_A_REALTIME_URL: fake.url,
  });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    t.app.handler,
  );
  const stack = { base: `http://127.0.0.1:${server.addr.port}` } as LiveStack;
  let b: Browser | null = null;
  try {
    const res = await t.request("/v1/sessions", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
      body: JSON.stringify({
        provider_type: "vendor_a_realtime",
        provider_config: { vendor_a_realtime: { client_secret: SECRET } },
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const created = await res.json();
    b = await connectActive(stack, created.session_id, created.client_token, 3);
    const browser = b;
    const peer = await fake.peer();
    assert.equal(peer.url.search, "", "no ?model= on the URL");
    assert.equal(peer.headers.get("openai-beta"), null, "no beta header");

    browser.send({ type: "text", text: "story" });
    const on = await browser.message(
      (m) => m.type === "avatar.speaking" && m.speaking === true,
      "the avatar speaking",
    );
    // The whole answer and response.done arrived long before the avatar said it.
    assert.ok(peer.json.some((m) => m.type === "response.create"));
    const cut = await browser.message(
      (m) => m.type === "turn.interrupted" && m.turn_id === on.turn_id,
      "the cut",
    );
    const played = cut.played_ms as number;
    assert.ok(
      played >= STORY_BARGE_IN_MS - 500 && played < STORY_MS - 500,
      `played_ms ${played}`,
    );
    const truncate = await fake.waiter.until(
      () => peer.json.find((m) => m.type === "conversation.item.truncate"),
      "the truncate",
    );
    assert.deepEqual(truncate, {
      type: "conversation.item.truncate",
      item_id: "item-resp_1",
      content_index: 0,
      audio_end_ms: played,
    });
    // The response was done: no cancel (it would draw an error).
    assert.equal(
      peer.json.filter((m) => m.type === "response.cancel").length,
      0,
    );
    const off = await browser.message(
      (m) => m.type === "avatar.speaking" && m.speaking === false,
      "the avatar silent",
    );
    assert.ok(
      (off.media_time_ms as number) - (on.media_time_ms as number) <
        STORY_MS - 500,
      "cut well before the end of the answer",
    );
    assert.deepEqual(fake.problems(), []);
    assert.equal(
      browser.json.filter((m) => m.type === "error").length,
      0,
      JSON.stringify(browser.json.filter((m) => m.type === "error")),
    );
  } finally {
    b?.close();
    await t.close();
    await server.shutdown();
    await fake.close();
  }
});
