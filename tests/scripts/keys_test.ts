import assert from "node:assert/strict";
import { getApiKey } from "../../lib/auth/api_key_admin.ts";
import { verifyApiKey } from "../../lib/auth/api_keys.ts";
import { closeDeps, createDeps } from "../../lib/wire.ts";
import { memoryLogger } from "../../lib/log.ts";
import { OPERATOR } from "../../lib/principal.ts";
import { type Run, runTask } from "./_task.ts";

/** Runs `deno task keys ...args` as the operator would, against the KV file `kvPath`. */
function keys(kvPath: string, ...args: string[]): Promise<Run> {
  return runTask("keys", kvPath, args);
}

async function withKv<T>(
  kvPath: string,
  fn: (deps: Awaited<ReturnType<typeof createDeps>>) => Promise<T>,
): Promise<T> {
  const deps = await createDeps({
    env: { KV_PATH: kvPath },
    log: memoryLogger(),
  });
  try {
    return await fn(deps);
  } finally {
    await closeDeps(deps);
  }
}

Deno.test("scripts/keys.ts creates, lists and revokes keys in the KV_PATH store", async (t) => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/data/kv.sqlite3`;
  try {
    let apiKey = "";
    let keyId = "";
    await t.step(
      "create prints the plaintext once, on stdout alone",
      async () => {
        const r = await keys(
          kvPath,
          "create",
          "--tenant",
          "acme",
          "--scopes",
          "sessions:read,sessions:write",
          "--name",
          "CI key",
          "--expires-in-days",
          "30",
        );
        assert.equal(r.code, 0, r.stderr);
        const lines = r.stdout.trim().split("\n");
        assert.equal(lines.length, 1);
        apiKey = lines[0];
        const m = apiKey.match(/^avk_([0-9A-Z]{26})_[A-Za-z0-9_-]{43}$/);
        assert.ok(m, apiKey);
        keyId = m[1];
        assert.equal(r.stderr.includes(apiKey), false);
        assert.match(r.stderr, new RegExp(`key_id: +${keyId}`));
        assert.match(r.stderr, /shown once/);
      },
    );
    await t.step(
      "the minted key verifies, expires in 30 days, and KV holds no plaintext",
      async () => {
        await withKv(kvPath, async (deps) => {
          const p = await verifyApiKey(deps, apiKey);
          assert.equal(p.tenantId, "acme");
          assert.deepEqual(p.scopes, ["sessions:read", "sessions:write"]);
          const view = (await getApiKey(deps, OPERATOR, keyId))!;
          assert.equal(view.name, "CI key");
          const days = (view.expires_at! - view.created_at) / 86_400_000;
          assert.ok(Math.abs(days - 30) < 0.001, String(days));
          const secret = apiKey.slice(-43);
          for await (const e of deps.kv.list({ prefix: [] })) {
            const text = JSON.stringify(
              e,
              (_k, v) => typeof v === "bigint" ? String(v) : v,
            );
            assert.equal(text.includes(secret), false);
          }
        });
      },
    );
    await t.step(
      "list shows keys without plaintext, filtered by tenant",
      async () => {
        const other = await keys(
          kvPath,
          "create",
          "--tenant=globex",
          "--scopes=keys:admin",
        );
        assert.equal(other.code, 0, other.stderr);
        const all = await keys(kvPath, "list");
        assert.equal(all.code, 0, all.stderr);
        assert.match(all.stdout, /^KEY_ID +TENANT +SCOPES/);
        assert.ok(all.stdout.includes(keyId));
        assert.ok(all.stdout.includes("globex"));
        assert.equal(all.stdout.includes(apiKey.slice(-43)), false);
        assert.equal(
          all.stdout.includes(other.stdout.trim().slice(-43)),
          false,
        );
        const acme = await keys(kvPath, "list", "--tenant", "acme");
        assert.ok(acme.stdout.includes(keyId));
        assert.equal(acme.stdout.includes("globex"), false);
      },
    );
    await t.step(
      "revoke revokes, then reports a repeat; an unknown key exits 1",
      async () => {
        const r = await keys(kvPath, "revoke", keyId);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout.trim(), `${keyId} revoked`);
        const again = await keys(kvPath, "revoke", keyId);
        assert.equal(again.code, 0);
        assert.equal(again.stdout.trim(), `${keyId} was already revoked`);
        const unknown = await keys(
          kvPath,
          "revoke",
          "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        );
        assert.equal(unknown.code, 1);
        assert.match(unknown.stderr, /No API key/);
        const list = await keys(kvPath, "list", "--tenant", "acme");
        const row = list.stdout.split("\n").find((l) => l.startsWith(keyId))!;
        // created, expires and revoked are set; last used is not.
        assert.equal(row.match(/\d{4}-\d\d-\d\dT/g)?.length, 3, row);
        await withKv(kvPath, async (deps) => {
          assert.ok(
            (await getApiKey(deps, OPERATOR, keyId))!.revoked_at !== undefined,
          );
        });
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("scripts/keys.ts exits 2 with a usage message on bad invocations", async (t) => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite3`;
  const cases: [string, string[], RegExp][] = [
    ["no command", [], /usage:/],
    ["unknown command", ["rotate"], /unknown command rotate/],
    [
      "create without --tenant",
      ["create", "--scopes", "sessions:read"],
      /--tenant is required/,
    ],
    [
      "create without --scopes",
      ["create", "--tenant", "acme"],
      /--scopes is required/,
    ],
    ["create with an unknown scope", [
      "create",
      "--tenant",
      "acme",
      "--scopes",
      "root",
    ], /scopes\[0\]/],
    ["create with a bad tenant", [
      "create",
      "--tenant",
      "a b",
      "--scopes",
      "sessions:read",
    ], /tenant_id/],
    [
      "create with bad --expires-in-days",
      [
        "create",
        "--tenant",
        "acme",
        "--scopes",
        "sessions:read",
        "--expires-in-days",
        "soon",
      ],
      /--expires-in-days/,
    ],
    ["unknown option", ["list", "--all"], /unknown option --all/],
    ["option without value", ["list", "--tenant"], /--tenant needs a value/],
    ["revoke without id", ["revoke"], /exactly one KEY_ID/],
  ];
  try {
    for (const [name, args, message] of cases) {
      await t.step(name, async () => {
        const r = await keys(kvPath, ...args);
        assert.equal(r.code, 2, r.stdout + r.stderr);
        assert.match(r.stderr, message);
        assert.equal(r.stdout, "");
      });
    }
    const list = await keys(kvPath, "list");
    assert.equal(
      list.stdout.trim().split("\n").length,
      1,
      "nothing was created",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
