/**
 * The admin console in a real headless Chromium against the real app on a loopback
 * socket: sign in, mint a key and use it against /v1, revoke it and see /v1 refuse it,
 * watch a session appear and move live (server-sent events), end it from the console.
 * Screenshots of every page, desktop and phone width, go to test-output/screenshots/.
 */
import assert from "node:assert/strict";
import { ensureIslandsBuilt } from "../../lib/console/bundle.ts";
import { moveSession } from "../../lib/sessions.ts";
import { TEST_ADMIN_KEY, testApp } from "../_helpers.ts";
import {
  openBrowser,
  requireChromium,
  serveLoopback,
  shoot,
} from "./_browser.ts";

Deno.test("admin console works end to end in headless Chromium", async (t) => {
  await requireChromium();
  await ensureIslandsBuilt();

  const app = await testApp();
  const { server, base } = serveLoopback((req, info) =>
    app.app.handler(req, info)
  );
  const browser = await openBrowser({
    prefix: "console-e2e-",
    permissions: ["clipboard-read", "clipboard-write"],
    origin: base,
    consoleErrors: true,
  });
  const { context, page, problems } = browser;

  const v1 = (path: string, key: string, init: RequestInit = {}) =>
    fetch(`${base}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
      },
    });

  try {
    await t.step(
      "sign-in refuses a wrong key, then accepts ADMIN_API_KEY",
      async () => {
        await page.goto(`${base}/admin`);
        assert.match(page.url(), /\/admin\/login/);
        await shoot(page, "01-login");
        await page.getByLabel("API key").fill("avk_not_a_real_key");
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByText("That API key is not valid").waitFor();
        await shoot(page, "02-login-error");
        await page.getByLabel("API key").fill(TEST_ADMIN_KEY);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.waitForURL(`${base}/admin/sessions`);
        const cookies = await context.cookies(`${base}/admin`);
        const session = cookies.find((c) => c.name === "avtr_console");
        assert.ok(session);
        assert.equal(session.httpOnly, true);
        assert.equal(session.sameSite, "Strict");
      },
    );

    let keyId = "";
    let plaintext = "";
    await t.step(
      "mints a key, shows it once with a working copy button",
      async () => {
        await page.goto(`${base}/admin/keys`);
        await shoot(page, "03-keys-empty");
        await page.locator("#mint-tenant").fill("acme");
        await page.getByLabel("Name (optional)").fill("e2e key");
        await page.getByRole("button", { name: "Mint key" }).click();
        const code = page.locator("#new-key-plaintext");
        plaintext = (await code.textContent()) ?? "";
        assert.match(plaintext, /^avk_[0-9A-Z]{26}_[A-Za-z0-9_-]{43}$/);
        keyId = plaintext.slice(4, 30);
        await page.getByText("It will not be shown again").waitFor();
        await page.getByRole("button", { name: "Copy key" }).click();
        await page.getByText("Copied to the clipboard").waitFor();
        const copied = await page.evaluate(() =>
          navigator.clipboard.readText()
        );
        assert.equal(copied, plaintext);
        await shoot(page, "04-key-minted");

        const res = await v1("/v1/sessions/session:nope", plaintext);
        assert.equal(res.status, 404);
        assert.equal((await res.json()).code, "AVTR_SESSION_NOT_FOUND");

        await page.goto(`${base}/admin/keys`);
        assert.equal((await page.content()).includes(plaintext), false);
        await page.locator(`tr[data-key-id="${keyId}"]`).waitFor();
      },
    );

    await t.step(
      "revokes the key after confirming; /v1 refuses it next",
      async () => {
        const row = page.locator(`tr[data-key-id="${keyId}"]`);
        await row.getByRole("button", { name: "Revoke" }).click();
        const dialog = page.getByRole("dialog");
        await dialog.waitFor();
        await shoot(page, "05-revoke-dialog");
        await dialog.getByRole("button", { name: "Revoke key" }).click();
        await page.getByText(`is revoked`).waitFor();
        assert.equal(await row.locator(".badge").textContent(), "revoked");
        await shoot(page, "06-key-revoked");
        const res = await v1("/v1/sessions/session:nope", plaintext);
        assert.equal(res.status, 401);
        assert.equal((await res.json()).code, "AVTR_AUTH_INVALID_KEY");
      },
    );

    let sessionId = "";
    await t.step(
      "a session appears and moves live on the sessions page",
      async () => {
        await page.goto(`${base}/admin/sessions`);
        await page.getByText("Live", { exact: true }).waitFor();
        assert.equal(await page.getByTestId("live-count").textContent(), "0");
        await shoot(page, "07-sessions-empty");
        const res = await v1("/v1/sessions", TEST_ADMIN_KEY, {
          method: "POST",
          body: JSON.stringify({
            provider_type: "external_engine",
            provider_config: {
              external_engine: {
                url: "wss://engine.example/ws",
                auth_headers: {},
              },
            },
            transport: "websocket_fmp4",
          }),
        });
        assert.equal(res.status, 200);
        sessionId = (await res.json()).session_id;
        const row = page.locator(`tr[data-session-id="${sessionId}"]`);
        await row.locator(".badge", { hasText: "created" }).waitFor();
        await page.getByTestId("live-count").getByText("1").waitFor();

        const deps = app.app.deps;
        const a = await moveSession(deps, sessionId, {
          from: ["created"],
          to: "activating",
        });
        assert.equal(a.ok, true);
        await row.locator(".badge", { hasText: "activating" }).waitFor();
        const b = await moveSession(deps, sessionId, {
          from: ["activating"],
          to: "active",
        });
        assert.equal(b.ok, true);
        await row.locator(".badge", { hasText: "active" }).waitFor();
        await shoot(page, "08-sessions-live");
      },
    );

    await t.step("ends the session from its detail page", async () => {
      await page.locator(`a[href*="${encodeURIComponent(sessionId)}"]`).click();
      await page.getByRole("heading", { name: "Timeline" }).waitFor();
      await shoot(page, "09-session-detail");
      await page.getByRole("button", { name: "End session" }).first().click();
      const dialog = page.getByRole("dialog");
      await dialog.waitFor();
      await dialog.getByRole("button", { name: "End session" }).click();
      await page.getByText("Session ended: ended.").waitFor();
      await shoot(page, "10-session-ended");
      const res = await v1(`/v1/sessions/${sessionId}`, TEST_ADMIN_KEY);
      assert.equal((await res.json()).status, "ended");
      await page.goto(`${base}/admin/sessions`);
      await page.locator(`tr[data-session-id="${sessionId}"] .badge`, {
        hasText: "ended",
      }).waitFor();
      assert.equal(await page.getByTestId("live-count").textContent(), "0");
    });

    await t.step("tenants: limit, org mapping, secret reveal", async () => {
      await page.goto(`${base}/admin/tenants`);
      await page.getByLabel("Organization (org_id claim)").fill("org_e2e");
      await page.getByLabel("Tenant", { exact: true }).fill("acme");
      await page.getByRole("button", { name: "Save mapping" }).click();
      await page.getByText("Organization org_e2e now maps to tenant acme")
        .waitFor();
      await shoot(page, "11-tenants");
      await page.goto(`${base}/admin/tenants/acme`);
      await page.getByLabel("Limit").fill("5");
      await page.getByRole("button", { name: "Save limit" }).click();
      await page.getByText("Limit set to 5 concurrent sessions").waitFor();
      await page.getByRole("button", { name: "Reveal secret" }).click();
      const secret = (await page.locator("#webhook-secret").textContent()) ??
        "";
      assert.match(secret, /^whsec_/);
      await shoot(page, "12-tenant-detail");
      await page.goto(`${base}/admin/tenants/acme`);
      assert.equal((await page.content()).includes(secret), false);
    });

    await t.step("instances: this process, live", async () => {
      await page.getByRole("link", { name: "Instances" }).click();
      await page.getByRole("heading", { name: "Instances" }).waitFor();
      const row = page.locator(
        `tr[data-instance-id="${app.app.deps.instanceId}"]`,
      );
      await row.locator(".badge", { hasText: "live" }).waitFor();
      await shoot(page, "13-instances");
    });

    await t.step("signs out", async () => {
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByText("You are signed out.").waitFor();
      await page.goto(`${base}/admin/keys`);
      assert.match(page.url(), /\/admin\/login\?next=/);
    });

    await t.step("no console errors and no CSP violations", () => {
      // The wrong-key step answers 401: Chromium logs that status as a console error.
      const real = problems.filter((p) => !/status of 401/.test(p));
      assert.deepEqual(real, []);
    });
  } finally {
    await browser.close();
    await server.shutdown();
    await app.close();
  }
});
