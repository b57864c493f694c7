/**
 * The console's sign-in limit per client address through the real form: refused
 * until the window ends, parallel wrong sign-ins that cannot race past it, a success
 * that does not count. The limiter itself: tests/lib/console/login_limit_test.ts.
 */
import assert from "node:assert/strict";
import { LOGIN_MAX_FAILURES } from "../../../lib/console/login_limit.ts";
import { TEST_ADMIN_KEY, testApp, TestClock } from "../../_helpers.ts";
import { cookieFrom, hiddenField, ORIGIN, postLogin } from "./_console.ts";

Deno.test("sign-in attempts are limited per client address until the window ends", async () => {
  const clock = new TestClock();
  const app = await testApp({}, { clock });
  try {
    for (let i = 0; i < LOGIN_MAX_FAILURES; i++) {
      const res = await postLogin(app, "avk_wrong");
      assert.equal(res.status, 401);
      await res.body?.cancel();
    }
    const blocked = await postLogin(app, TEST_ADMIN_KEY);
    assert.equal(blocked.status, 429);
    assert.ok(Number(blocked.headers.get("retry-after")) >= 1);
    assert.equal(cookieFrom(blocked, "avtr_console"), null);
    assert.match(await blocked.text(), /Too many failed sign-ins/);
    clock.advance(15 * 60 * 1000);
    const again = await postLogin(app, TEST_ADMIN_KEY);
    assert.equal(again.status, 303);
  } finally {
    await app.close();
  }
});

Deno.test("parallel wrong sign-ins cannot race past the limit: check and count are one atomic step", async () => {
  const app = await testApp();
  try {
    // Every form is fetched first, then all posts go at once, so that each one's check
    // happens before any failure is counted, if check and count were two steps.
    const N = LOGIN_MAX_FAILURES * 4;
    const forms = await Promise.all(
      Array.from({ length: N }, async () => {
        const page = await app.request("/admin/login");
        const html = await page.text();
        return {
          cookie: cookieFrom(page, "avtr_console_login")!,
          csrf: hiddenField(html, "_csrf"),
        };
      }),
    );
    const results = await Promise.all(forms.map(async (f, i) => {
      const res = await app.request("/admin/login", {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          cookie: f.cookie,
          origin: ORIGIN,
        },
        body: new URLSearchParams({
          _csrf: f.csrf,
          next: "/admin/sessions",
          api_key: `avk_wrong_${i}`,
        }),
        redirect: "manual",
      });
      await res.body?.cancel();
      return res.status;
    }));
    const checked = results.filter((s) => s === 401).length;
    const refused = results.filter((s) => s === 429).length;
    assert.equal(checked, LOGIN_MAX_FAILURES, `statuses: ${results}`);
    assert.equal(refused, N - LOGIN_MAX_FAILURES);
    const after = await postLogin(app, TEST_ADMIN_KEY);
    await after.body?.cancel();
    assert.equal(after.status, 429, "the window is full");
  } finally {
    await app.close();
  }
});

Deno.test("a successful sign-in does not count against the address's limit", async () => {
  const app = await testApp();
  try {
    for (let i = 0; i < LOGIN_MAX_FAILURES + 2; i++) {
      const res = await postLogin(app, TEST_ADMIN_KEY);
      await res.body?.cancel();
      assert.equal(res.status, 303);
    }
    for (let i = 0; i < LOGIN_MAX_FAILURES - 1; i++) {
      const res = await postLogin(app, "avk_wrong");
      await res.body?.cancel();
      assert.equal(res.status, 401);
    }
    const ok = await postLogin(app, TEST_ADMIN_KEY);
    await ok.body?.cancel();
    assert.equal(ok.status, 303);
  } finally {
    await app.close();
  }
});
