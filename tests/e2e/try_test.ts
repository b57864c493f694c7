/**
 * The console's Try it page in a real headless Chromium: the real app on a loopback
 * socket with `TRY_ENGINE_URL` pointing at the example engine (in-process, over TLS with
 * the test certificates; `deno task test` sets DENO_CERT), sign in, start a session from
 * the form, watch the avatar play, send the microphone, type a message and see the
 * avatar's answer in the transcript, end the session. The console's strict CSP stays on
 * throughout: any violation or console error fails the test. Screenshots:
 * test-output/screenshots/try-{form-,}{desktop,phone}.png.
 */
import assert from "node:assert/strict";
import { startTestJanus } from "../lib/sfu/_janus.ts";
import type { Page } from "playwright-core";
import { ensureIslandsBuilt } from "../../lib/console/bundle.ts";
import { readSession } from "../../lib/sessions.ts";
import { replyFor } from "../../scripts/example_engine.ts";
import { TEST_ADMIN_KEY, testApp } from "../_helpers.ts";
import {
  openBrowser,
  requireChromium,
  serveLoopback,
  shoot,
  startTlsEngine,
  WAIT,
} from "./_browser.ts";

/** What the init script records in the page. */
type Probe = { __binaryFrames: number };

function binaryFrames(page: Page): Promise<number> {
  return page.evaluate(() => (globalThis as unknown as Probe).__binaryFrames);
}

Deno.test("try it: talk to the avatar from the console in headless Chromium", async (t) => {
  await requireChromium();
  await ensureIslandsBuilt();

  const engine = await startTlsEngine();
  const janus = await startTestJanus();
  const app = await testApp({
    ALLOW_PRIVATE_NETWORK_TARGETS: "true",
    TRY_ENGINE_URL: engine.url,
    ...janus.env,
  });
  const { server, base } = serveLoopback((req, info) =>
    app.app.handler(req, info)
  );
  const browser = await openBrowser({
    prefix: "try-e2e-",
    permissions: ["microphone"],
    origin: base,
    media: true,
    consoleErrors: true,
    csp: true,
  });
  const { page, problems, csp } = browser;
  // Counts binary frames sent on any WebSocket (the microphone): the page itself
  // exposes nothing for tests.
  await browser.context.addInitScript(() => {
    const w = globalThis as unknown as Probe;
    w.__binaryFrames = 0;
    const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function (data) {
      if (typeof data !== "string") w.__binaryFrames++;
      return send.call(this, data);
    };
  });

  let sessionId = "";
  try {
    await t.step("sign in and open Try it", async () => {
      await page.goto(`${base}/admin/login`);
      await page.getByLabel("API key").fill(TEST_ADMIN_KEY);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${base}/admin/sessions`);
      await page.getByRole("link", { name: "Try it" }).click();
      await page.waitForURL(`${base}/admin/try`);
      assert.equal(
        await page.getByLabel("Engine URL").inputValue(),
        engine.url,
      );
      assert.equal(await page.getByLabel("Tenant").inputValue(), "demo");
      await shoot(page, "try-form");
    });

    await t.step("a bad engine URL is reported next to the field", async () => {
      await page.getByLabel("Engine URL").fill("http://engine.example/");
      await page.getByRole("button", { name: "Start session" }).click();
      await page.locator("#try-engine_url-error", {
        hasText: "must be a wss:// URL",
      }).waitFor(WAIT);
      await page.getByLabel("Engine URL").fill(engine.url);
    });

    await t.step("start a session: the avatar plays", async () => {
      await page.getByLabel("Avatar").selectOption("mira");
      await page.getByLabel("Transport").selectOption("websocket_fmp4");
      await page.getByRole("button", { name: "Start session" }).click();
      await page.waitForURL(/\/admin\/try\?session=/);
      sessionId = new URL(page.url()).searchParams.get("session") ?? "";
      assert.match(sessionId, /^session:/);
      await page.getByTestId("try-state").filter({ hasText: "Connected" })
        .waitFor(WAIT);
      await page.getByTestId("try-status").filter({ hasText: "active" })
        .waitFor(WAIT);
      const start = await page.evaluate(() => {
        const v = document.querySelector("video")!;
        return { t: v.currentTime, muted: v.muted };
      });
      assert.equal(start.muted, true);
      await page.waitForFunction(
        (t0) => {
          const v = document.querySelector("video")!;
          return !v.paused && v.currentTime > t0 + 1.5;
        },
        start.t,
        WAIT,
      );
      const rec = await readSession(app.app.deps, sessionId);
      assert.equal(rec?.status, "active");
      assert.equal(rec?.tenant_id, "demo");
      assert.equal(rec?.avatar_id, "mira");
      // No media token anywhere in the page's markup.
      assert.doesNotMatch(await page.content(), /mt1\.[A-Za-z0-9_-]{10,}\./);
    });

    await t.step("Enable sound unmutes the video", async () => {
      await page.getByRole("button", { name: "Enable sound" }).click();
      assert.equal(
        await page.evaluate(() => document.querySelector("video")!.muted),
        false,
      );
      await page.getByRole("button", { name: "Enable sound" }).waitFor({
        state: "detached",
      });
    });

    await t.step("the microphone is sent, and not while muted", async () => {
      await page.waitForFunction(
        () => (globalThis as unknown as Probe).__binaryFrames > 25,
        undefined,
        WAIT,
      );
      await page.getByRole("button", { name: "Mute mic" }).click();
      await page.getByRole("button", { name: "Unmute mic" }).waitFor(WAIT);
      const muted = await binaryFrames(page);
      // Half a second of capture (25 frames when live) sends nothing.
      await page.evaluate(() => new Promise((ok) => setTimeout(ok, 500)));
      assert.equal(await binaryFrames(page), muted);
    });

    await t.step("typed text comes back as the avatar's answer", async () => {
      await page.getByLabel("Message").fill("hello avatar");
      await page.getByRole("button", { name: "Send", exact: true }).click();
      await page.locator('.try-transcript li[data-role="user"]', {
        hasText: "hello avatar",
      }).waitFor(WAIT);
      await page.locator('.try-transcript li[data-role="avatar"]', {
        hasText: replyFor("hello avatar"),
      }).waitFor(WAIT);
      assert.equal(await page.getByLabel("Message").inputValue(), "");
      await page.getByRole("button", { name: "Interrupt" }).click();
      await shoot(page, "try");
    });

    await t.step("End ends the session", async () => {
      await page.getByRole("button", { name: "End session" }).click();
      await page.getByText("Session ended.").waitFor(WAIT);
      assert.equal(
        (await readSession(app.app.deps, sessionId))?.status,
        "ended",
      );
      await page.getByRole("button", { name: "Start session" }).waitFor(WAIT);
    });

    await t.step("a webrtc_sfu session plays over WebRTC", async () => {
      await page.getByLabel("Transport").selectOption("webrtc_sfu");
      await page.getByRole("button", { name: "Start session" }).click();
      await page.waitForURL(/\/admin\/try\?session=/);
      const id = new URL(page.url()).searchParams.get("session") ?? "";
      await page.getByTestId("try-status").filter({ hasText: "active" })
        .waitFor(WAIT);
      await page.waitForFunction(
        () => {
          const v = document.querySelector("video")!;
          return v.srcObject !== null && !v.paused && v.videoWidth > 0 &&
            v.currentTime > 1;
        },
        undefined,
        WAIT,
      );
      const rec = await readSession(app.app.deps, id);
      assert.equal(rec?.transport, "webrtc_sfu");
      await shoot(page, "try-sfu");
      await page.getByRole("button", { name: "End session" }).click();
      await page.getByText("Session ended.").waitFor(WAIT);
    });

    await t.step("no console errors and no CSP violations", () => {
      assert.deepEqual(csp, []);
      // The refused form above answers 400 on purpose; Chromium logs that.
      const real = problems.filter((p) => !/status of 400/.test(p));
      assert.deepEqual(real, []);
    });
  } finally {
    await browser.close();
    await server.shutdown();
    await app.close();
    await engine.close();
    await janus.stop();
  }
});
