import assert from "node:assert/strict";
import {
  MAX_FEEDS_PER_KEY,
  MAX_FEEDS_PER_TENANT,
  type SessionsSnapshot,
} from "../../../lib/console/live.ts";
import { moveSession } from "../../../lib/sessions.ts";
import { authJson, TEST_ADMIN_KEY, testApp } from "../../_helpers.ts";
import {
  type Console,
  createSessionViaApi,
  get,
  mintViaApi,
  post,
  signIn,
} from "./_console.ts";
import { SseReader } from "./_sse.ts";

type App = Awaited<ReturnType<typeof testApp>>;

async function activate(app: App, id: string): Promise<void> {
  const deps = app.app.deps;
  assert.ok(
    (await moveSession(deps, id, { from: ["created"], to: "activating" })).ok,
  );
  assert.ok(
    (await moveSession(deps, id, { from: ["activating"], to: "active" })).ok,
  );
}

async function statusViaApi(app: App, id: string): Promise<string> {
  const res = await app.request(`/v1/sessions/${id}`, {
    headers: authJson(TEST_ADMIN_KEY),
  });
  assert.equal(res.status, 200);
  return (await res.json()).status;
}

function rowsOf(html: string): string[] {
  return [...html.matchAll(/<tr data-session-id="([^"]+)"/g)].map((m) => m[1]);
}

Deno.test("sessions page lists sessions newest first with tenant and status filters", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const acmeKey = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["sessions:read", "sessions:write"],
    });
    const a = await createSessionViaApi(app);
    const b = await createSessionViaApi(app, acmeKey.api_key);
    await activate(app, b);

    await t.step(
      "all sessions, with the live counter and the island",
      async () => {
        const html = await (await get(app, c, "/admin/sessions")).text();
        assert.deepEqual(rowsOf(html), [b, a]);
        assert.match(html, /data-testid="live-count">2</);
        assert.match(html, /data-island="LiveSessions"/);
        assert.match(html, /\/admin\/sessions\/events/);
      },
    );
    await t.step("tenant filter", async () => {
      const html = await (await get(app, c, "/admin/sessions?tenant=acme"))
        .text();
      assert.deepEqual(rowsOf(html), [b]);
      assert.match(html, /data-testid="live-count">1</);
      assert.match(html, /events\?tenant=acme/);
    });
    await t.step("status filter", async () => {
      const html = await (await get(app, c, "/admin/sessions?status=created"))
        .text();
      assert.deepEqual(rowsOf(html), [a]);
    });
    await t.step("bad filters are reported and dropped", async () => {
      const html =
        await (await get(app, c, "/admin/sessions?tenant=a%20b&status=nope"))
          .text();
      assert.match(html, /Tenant ids are 1 to 64 characters/);
      assert.match(html, /Unknown status/);
      assert.deepEqual(rowsOf(html), [b, a]);
    });
    await t.step("empty state", async () => {
      const html = await (await get(app, c, "/admin/sessions?tenant=nobody"))
        .text();
      assert.match(html, /No session matches these filters/);
    });
  } finally {
    await app.close();
  }
});

Deno.test("session detail shows the timeline; unknown ids answer 404", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const id = await createSessionViaApi(app);
    await activate(app, id);
    const res = await get(app, c, `/admin/sessions/${encodeURIComponent(id)}`);
    assert.equal(res.status, 200);
    const html = await res.text();
    for (const s of ["created", "activating", "active"]) {
      assert.match(html, new RegExp(`badge-${s}`));
    }
    assert.match(html, /Segments rendered/);
    assert.match(html, /data-island="ConfirmButton"/);
    for (const bad of ["session:nope", "not-a-session"]) {
      const r = await get(app, c, `/admin/sessions/${bad}`);
      assert.equal(r.status, 404);
      assert.match(await r.text(), /Session not found/);
    }
  } finally {
    await app.close();
  }
});

Deno.test("ending from the console asks first, then ends through the API's rules", async (t) => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const id = await createSessionViaApi(app);
    const path = `/admin/sessions/${encodeURIComponent(id)}`;

    await t.step("a created session is not endable: 409 in place", async () => {
      const res = await post(app, c, path, { action: "end", confirm: "yes" });
      assert.equal(res.status, 409);
      assert.match(await res.text(), /Only active sessions can be ended/);
      assert.equal(await statusViaApi(app, id), "created");
    });
    await activate(app, id);
    await t.step("without confirm=yes the page asks", async () => {
      const res = await post(app, c, path, { action: "end" });
      assert.equal(res.status, 200);
      assert.match(await res.text(), /End this session\?/);
      assert.equal(await statusViaApi(app, id), "active");
    });
    await t.step("a forged token is refused", async () => {
      const res = await post(app, c, path, {
        action: "end",
        confirm: "yes",
        _csrf: "forged",
      });
      assert.equal(res.status, 403);
      await res.body?.cancel();
      assert.equal(await statusViaApi(app, id), "active");
    });
    await t.step("confirmed: ended, and the page says so", async () => {
      const res = await post(app, c, path, { action: "end", confirm: "yes" });
      assert.equal(res.status, 303);
      assert.equal(res.headers.get("location"), `${path}?ended=1`);
      assert.equal(await statusViaApi(app, id), "ended");
      const html = await (await get(app, c, `${path}?ended=1`)).text();
      assert.match(html, /Session ended: ended/);
      assert.match(html, /This session is over/);
    });
    await t.step("ending again answers 409 in place", async () => {
      const res = await post(app, c, path, { action: "end", confirm: "yes" });
      assert.equal(res.status, 409);
      assert.match(await res.text(), /already ended/);
    });
  } finally {
    await app.close();
  }
});

Deno.test("force end from the console ends an active session", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const id = await createSessionViaApi(app);
    await activate(app, id);
    const path = `/admin/sessions/${encodeURIComponent(id)}`;
    const ask = await post(app, c, path, { action: "force_end" });
    assert.match(await ask.text(), /Force end this session\?/);
    const res = await post(app, c, path, {
      action: "force_end",
      confirm: "yes",
    });
    assert.equal(res.status, 303);
    assert.equal(await statusViaApi(app, id), "ended");
    const bad = await post(app, c, path, { action: "explode", confirm: "yes" });
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
  } finally {
    await app.close();
  }
});

Deno.test("the live stream sends a snapshot at once and on every move", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    const res = await get(app, c, "/admin/sessions/events");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
    const sse = new SseReader(res);
    try {
      const first = await sse.next();
      assert.equal(first?.event, "sessions");
      const empty = JSON.parse(first!.data) as SessionsSnapshot;
      assert.deepEqual(empty.rows, []);
      assert.equal(empty.live_count, 0);

      const id = await createSessionViaApi(app);
      const created = await sse.until((e) => e.data.includes(id));
      const snap = JSON.parse(created!.data) as SessionsSnapshot;
      assert.equal(snap.rows[0].status, "created");
      assert.equal(snap.live_count, 1);
      assert.equal("owner" in snap.rows[0], false, "display fields only");

      await moveSession(app.app.deps, id, {
        from: ["created"],
        to: "activating",
      });
      const moved = await sse.until((e) =>
        (JSON.parse(e.data) as SessionsSnapshot).rows[0]?.status ===
          "activating"
      );
      assert.ok(moved);
    } finally {
      await sse.close();
    }

    // A reconnect (EventSource does it by itself) resumes with the current state.
    const again = new SseReader(await get(app, c, "/admin/sessions/events"));
    try {
      const snap = JSON.parse((await again.next())!.data) as SessionsSnapshot;
      assert.equal(snap.rows[0].status, "activating");
    } finally {
      await again.close();
    }
  } finally {
    await app.close();
  }
});

Deno.test("the live stream follows the tenant filter and ends when the operator signs out", async () => {
  const app = await testApp();
  try {
    const c = await signIn(app);
    await createSessionViaApi(app);
    const sse = new SseReader(
      await get(app, c, "/admin/sessions/events?tenant=acme"),
    );
    const first = JSON.parse((await sse.next())!.data) as SessionsSnapshot;
    assert.deepEqual(first.rows, []);
    const out = await post(app, c, "/admin/logout", {});
    assert.equal(out.status, 303);
    const end = await sse.next();
    assert.equal(end?.event, "signed_out");
    assert.equal(await sse.next(), null, "the stream closes");
  } finally {
    await app.close();
  }
});

/** Opens one live feed per sign-in in `consoles`; the feeds opened and the refusals. */
async function openFeeds(
  app: App,
  consoles: Console[],
  open: SseReader[],
): Promise<string[]> {
  const refusals: string[] = [];
  for (const c of consoles) {
    const res = await get(app, c, "/admin/sessions/events");
    if (res.status === 200) {
      const sse = new SseReader(res);
      open.push(sse);
      assert.equal((await sse.next())?.event, "sessions");
      continue;
    }
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("retry-after"), "10");
    refusals.push(await res.text());
  }
  return refusals;
}

Deno.test("40 sign-ins with one API key hold at most MAX_FEEDS_PER_KEY live feeds; the rest get 429 naming the key", async () => {
  const app = await testApp();
  const open: SseReader[] = [];
  try {
    const key = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["sessions:read", "keys:admin"],
    });
    const consoles: Console[] = [];
    for (let i = 0; i < 40; i++) consoles.push(await signIn(app, key.api_key));
    const refusals = await openFeeds(app, consoles, open);
    assert.equal(open.length, MAX_FEEDS_PER_KEY);
    assert.equal(refusals.length, 40 - MAX_FEEDS_PER_KEY);
    for (const text of refusals) {
      assert.match(
        text,
        new RegExp(`API key already holds ${MAX_FEEDS_PER_KEY} live feeds`),
      );
    }
    // Another key of the tenant has its own feeds.
    const other = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["sessions:read", "keys:admin"],
    });
    assert.deepEqual(
      await openFeeds(app, [await signIn(app, other.api_key)], open),
      [],
    );
    // A feed that closes frees its place for any sign-in of the key.
    await open.shift()!.close();
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await openFeeds(app, [consoles[39]], open), []);
    assert.equal((await openFeeds(app, [consoles[38]], open)).length, 1);
  } finally {
    for (const s of open) await s.close();
    await app.close();
  }
});

Deno.test("a tenant's keys together hold at most MAX_FEEDS_PER_TENANT live feeds; another tenant still gets its own", async () => {
  const app = await testApp();
  const open: SseReader[] = [];
  try {
    const keys = Math.ceil(MAX_FEEDS_PER_TENANT / MAX_FEEDS_PER_KEY) + 1;
    const consoles: Console[] = [];
    for (let k = 0; k < keys; k++) {
      const key = await mintViaApi(app, {
        tenant_id: "acme",
        scopes: ["sessions:read", "keys:admin"],
      });
      const c = await signIn(app, key.api_key);
      for (let i = 0; i < MAX_FEEDS_PER_KEY; i++) consoles.push(c);
    }
    const refusals = await openFeeds(app, consoles, open);
    assert.equal(open.length, MAX_FEEDS_PER_TENANT);
    assert.equal(refusals.length, consoles.length - MAX_FEEDS_PER_TENANT);
    for (const text of refusals) {
      assert.match(
        text,
        new RegExp(`Tenant acme already holds ${MAX_FEEDS_PER_TENANT} live`),
      );
    }
    const globex = await mintViaApi(app, {
      tenant_id: "globex",
      scopes: ["sessions:read", "keys:admin"],
    });
    assert.deepEqual(
      await openFeeds(app, [await signIn(app, globex.api_key)], open),
      [],
    );
    // The operator (ADMIN_API_KEY) is a holder of its own.
    assert.deepEqual(await openFeeds(app, [await signIn(app)], open), []);
  } finally {
    for (const s of open) await s.close();
    await app.close();
  }
});
