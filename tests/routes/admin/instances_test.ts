/**
 * The operator's view of the instances (docs/console.md, "Instances"): the instances page
 * lists every instance record, live ones first, with its role, URL, heartbeat, slots,
 * SFU and drain state; the session page names the instance holding the session. A
 * tenant administrator sees neither, nor the nav link.
 */
import assert from "node:assert/strict";
import {
  instanceKey,
  type InstanceRecord,
  instanceStaleMs,
} from "../../../lib/media/presence.ts";
import { announceInstance } from "../../../lib/media/presence.ts";
import { sessionKey } from "../../../lib/sessions/store.ts";
import { testApp, TestClock } from "../../_helpers.ts";
import { createSessionViaApi, get, mintViaApi, signIn } from "./_console.ts";

type App = Awaited<ReturnType<typeof testApp>>;

const SELF_URL = "https://self.example";
const NODE_LIVE = "11111111-aaaa-4aaa-8aaa-000000000001";
const NODE_DRAINING = "22222222-bbbb-4bbb-8bbb-000000000002";
const NODE_STALE = "33333333-cccc-4ccc-8ccc-000000000003";

/** The instance table's rows, in page order: id → the row's HTML. */
function rowsOf(html: string): Map<string, string> {
  return new Map(
    [...html.matchAll(/<tr data-instance-id="([^"]+)"[^>]*>([\s\S]*?)<\/tr>/g)]
      .map((m) => [m[1], m[2]]),
  );
}

/** The row of instance `id`. */
function rowOf(rows: Map<string, string>, id: string): string {
  const row = rows.get(id);
  assert.ok(row, `no row for ${id}`);
  return row;
}

/** The text of the cell `data-field="<field>"` in a row, tags stripped. */
function field(row: string, name: string): string {
  const m = row.match(
    new RegExp(`data-field="${name}"[^>]*>([\\s\\S]*?)</td>`),
  );
  assert.ok(m, `no ${name} cell`);
  return m[1].replace(/<[^>]+>/g, "").trim();
}

async function writeInstance(
  app: App,
  id: string,
  rec: InstanceRecord,
): Promise<void> {
  await app.app.deps.kv.set(instanceKey(id), rec);
}

async function appWithNodes(): Promise<App> {
  const clock = new TestClock();
  const app = await testApp({ INSTANCE_URL: SELF_URL }, { clock });
  const deps = app.app.deps;
  await announceInstance(deps);
  const now = clock.t;
  await writeInstance(app, NODE_LIVE, {
    started_at: now - 3_600_000,
    heartbeat_at: now - 2_000,
    url: "https://node-a.example",
    role: "media",
    render: { free: 3, max: 4 },
    sfu: true,
  });
  await writeInstance(app, NODE_DRAINING, {
    started_at: now - 7_200_000,
    heartbeat_at: now - 4_000,
    url: "https://node-b.example",
    role: "media",
    render: { free: 0, max: 4 },
    sfu: false,
    draining: true,
  });
  await writeInstance(app, NODE_STALE, {
    started_at: now - 9_000_000,
    heartbeat_at: now - instanceStaleMs(deps.config) - 1_000,
    url: "https://node-c.example",
    role: "media",
    render: { free: 4, max: 4 },
    sfu: true,
  });
  return app;
}

Deno.test("instances page lists every instance record, live ones first, for the operator", async (t) => {
  const app = await appWithNodes();
  try {
    const self = app.app.deps.instanceId;
    const c = await signIn(app);
    const res = await get(app, c, "/admin/instances");
    assert.equal(res.status, 200);
    const sessions = await get(app, c, "/admin/sessions");
    await sessions.body?.cancel();
    assert.equal(
      res.headers.get("content-security-policy"),
      sessions.headers.get("content-security-policy"),
    );
    const html = await res.text();
    const rows = rowsOf(html);

    await t.step("live records first, the stale one last", () => {
      assert.deepEqual([...rows.keys()].at(-1), NODE_STALE);
      assert.deepEqual(
        [...rows.keys()].slice(0, 3).sort(),
        [NODE_DRAINING, NODE_LIVE, self].sort(),
      );
    });

    await t.step("the app's own record: role all, its URL, live", () => {
      const row = rowOf(rows, self);
      assert.ok(row.includes(`>${self.slice(0, 8)}</code>`), row);
      assert.ok(row.includes(SELF_URL));
      assert.match(row, /<td data-label="Role">all<\/td>/);
      assert.equal(field(row, "state"), "live");
      assert.equal(field(row, "age"), "0 s");
    });

    await t.step("a live media node: age, slots, SFU", () => {
      const row = rowOf(rows, NODE_LIVE);
      assert.equal(field(row, "state"), "live");
      assert.equal(field(row, "age"), "2 s");
      assert.equal(field(row, "sfu"), "yes");
      assert.equal(field(row, "draining"), "no");
      assert.match(row, /<td data-label="Role">media<\/td>/);
      assert.match(row, /https:\/\/node-a\.example/);
      assert.match(row, />3 \/ 4</);
    });

    await t.step("a draining node is marked draining, without SFU", () => {
      const row = rowOf(rows, NODE_DRAINING);
      assert.equal(field(row, "state"), "live");
      assert.equal(field(row, "draining"), "draining");
      assert.equal(field(row, "sfu"), "no");
    });

    await t.step("a silent node is stale", () => {
      const row = rowOf(rows, NODE_STALE);
      assert.equal(field(row, "state"), "stale");
      assert.equal(field(row, "age"), "36 s");
    });

    await t.step("the nav links to the page, marked current", () => {
      assert.match(
        html,
        /<a href="\/admin\/instances" aria-current="page">Instances<\/a>/,
      );
    });
  } finally {
    await app.close();
  }
});

Deno.test("instances page, link and session holder are hidden from a tenant administrator", async (t) => {
  const app = await appWithNodes();
  try {
    const self = app.app.deps.instanceId;
    const acmeAdmin = await mintViaApi(app, {
      tenant_id: "acme",
      scopes: ["keys:admin", "sessions:read", "sessions:write"],
    });
    const sid = await createSessionViaApi(app, acmeAdmin.api_key);
    const c = await signIn(app, acmeAdmin.api_key);
    const infra = [
      self,
      self.slice(0, 8),
      SELF_URL,
      NODE_LIVE.slice(0, 8),
      "node-a.example",
    ];

    await t.step("the page is refused (403 Operator only)", async () => {
      const res = await get(app, c, "/admin/instances");
      assert.equal(res.status, 403);
      const html = await res.text();
      assert.match(html, /Operator only/);
      for (const s of infra) assert.equal(html.includes(s), false, s);
    });

    await t.step("no Instances link in the nav", async () => {
      const html = await (await get(app, c, "/admin/sessions")).text();
      assert.match(html, /href="\/admin\/sessions"/);
      assert.equal(html.includes('href="/admin/instances"'), false);
    });

    await t.step("its session's page names no instance", async () => {
      const res = await get(app, c, `/admin/sessions/${sid}`);
      assert.equal(res.status, 200);
      const html = await res.text();
      assert.match(html, /<dt>Status<\/dt>/);
      assert.equal(html.includes('data-field="holder"'), false);
      for (const s of infra) assert.equal(html.includes(s), false, s);
    });

    await t.step("the operator sees the same session's holder", async () => {
      const op = await signIn(app);
      const html = await (await get(app, op, `/admin/sessions/${sid}`))
        .text();
      const holder = html.match(/data-field="holder"[^>]*>([\s\S]*?)<\/dd>/);
      assert.ok(holder, "no holder");
      assert.match(holder[1], new RegExp(`>${self.slice(0, 8)}</code>`));
      assert.match(holder[1], /<span>all<\/span>/);
      assert.ok(holder[1].includes(SELF_URL));
      assert.match(holder[1], />live</);
    });
  } finally {
    await app.close();
  }
});

Deno.test("session page shows a stale or vanished holder to the operator", async (t) => {
  const app = await appWithNodes();
  try {
    const deps = app.app.deps;
    const sid = await createSessionViaApi(app);
    const c = await signIn(app);
    const ownedBy = async (owner: string) => {
      const entry = await deps.kv.get<Record<string, unknown>>(
        sessionKey(sid),
      );
      assert.ok(entry.value);
      await deps.kv.set(sessionKey(sid), { ...entry.value, owner });
      const html = await (await get(app, c, `/admin/sessions/${sid}`)).text();
      const m = html.match(/data-field="holder"[^>]*>([\s\S]*?)<\/dd>/);
      assert.ok(m, "no holder");
      return m[1];
    };

    await t.step("a stale holder", async () => {
      const holder = await ownedBy(NODE_STALE);
      assert.match(holder, new RegExp(`>${NODE_STALE.slice(0, 8)}</code>`));
      assert.match(holder, /<span>media<\/span>/);
      assert.ok(holder.includes("https://node-c.example"));
      assert.match(holder, />stale</);
    });

    await t.step("a holder whose record is gone", async () => {
      const gone = "44444444-dddd-4ddd-8ddd-000000000004";
      const holder = await ownedBy(gone);
      assert.match(holder, new RegExp(`>${gone.slice(0, 8)}</code>`));
      assert.match(holder, /no instance record/);
    });
  } finally {
    await app.close();
  }
});
