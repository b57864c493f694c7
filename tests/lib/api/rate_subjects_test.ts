/**
 * Rate-limit subjects (lib/api/rate_subjects.ts): keyed HMACs of kind and value, so a KV
 * dump names no credential or address; IPv6 addresses grouped by /64.
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { createApp } from "../../../app.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { RateLimiter, rateLimiterOf } from "../../../lib/api/rate_limit.ts";
import { addressGroup, SubjectMac } from "../../../lib/api/rate_subjects.ts";
import { TEST_ADMIN_KEY, TEST_TOKEN_SECRET } from "../../_helpers.ts";

function sha256Hex(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

async function storedSubjects(
  env: Record<string, string>,
  credential: string,
): Promise<{ subjects: string[]; log: string[] }> {
  const kv = await Deno.openKv(":memory:");
  const log = memoryLogger();
  const app = await createApp({
    env: { ADMIN_API_KEY: TEST_ADMIN_KEY, ...env },
    kv,
    log,
  });
  try {
    const res = await app.handler(
      new Request("http://localhost/v1/nope", {
        headers: { authorization: `Bearer ${credential}` },
      }),
    );
    await res.body?.cancel();
    await rateLimiterOf(app.deps).flush();
    const subjects: string[] = [];
    for await (const e of kv.list({ prefix: ["rate_limits"] })) {
      subjects.push(String(e.key[2]));
    }
    return { subjects, log: log.lines };
  } finally {
    await app.close();
    kv.close();
  }
}

Deno.test("rate-limit subjects in KV are keyed by TOKEN_SECRET: no offline guessing from a KV dump", async (t) => {
  const credential = "weak-admin-key";
  const other = "other-token-secret-0123456789abcdefghijklmnop";
  await t.step("one secret, one subject on every instance", async () => {
    const a = await storedSubjects(
      { TOKEN_SECRET: TEST_TOKEN_SECRET },
      credential,
    );
    const b = await storedSubjects(
      { TOKEN_SECRET: TEST_TOKEN_SECRET },
      credential,
    );
    assert.equal(a.subjects.length, 1);
    assert.deepEqual(a.subjects, b.subjects);
    assert.notEqual(a.subjects[0], "a:" + sha256Hex("a\0unknown"));
    assert.equal(a.subjects[0].includes(credential), false);
    const c = await storedSubjects({ TOKEN_SECRET: other }, credential);
    assert.notEqual(
      c.subjects[0],
      a.subjects[0],
      "another secret, another subject",
    );
  });
  await t.step(
    "an unusable secret: a random per-process key, with one warning",
    async () => {
      const a = await storedSubjects({ TOKEN_SECRET: "short" }, credential);
      const b = await storedSubjects({ TOKEN_SECRET: "short" }, credential);
      assert.notEqual(a.subjects[0], b.subjects[0]);
      const warnings = a.log.map((l) => JSON.parse(l)).filter((r) =>
        r.level === "warn" && /rate-limit/.test(r.msg)
      );
      assert.equal(warnings.length, 1);
    },
  );
});

Deno.test("SubjectMac is HMAC-SHA256 (RFC 2104) of kind and value, keyed", () => {
  const k1 = new Uint8Array(32).fill(1);
  const m1 = new SubjectMac(k1);
  const s1 = m1.subject("a", "10.0.0.1");
  assert.equal(
    s1,
    "a:" + createHmac("sha256", k1).update("a\0" + "10.0.0.1").digest("hex"),
  );
  assert.notEqual(
    s1,
    new SubjectMac(new Uint8Array(32).fill(2)).subject("a", "10.0.0.1"),
  );
  assert.notEqual(s1.slice(2), m1.subject("i", "10.0.0.1").slice(2));
  // Keys longer than a SHA-256 block are hashed first, as RFC 2104 says.
  const long = new Uint8Array(100).fill(9);
  assert.equal(
    new SubjectMac(long).subject("a", "x"),
    "a:" + createHmac("sha256", long).update("a\0x").digest("hex"),
  );
});

Deno.test("addressGroup(): IPv4 as it is, IPv6 by /64, IPv4-mapped as IPv4", () => {
  const cases: [string, string][] = [
    ["192.0.2.1", "192.0.2.1"],
    ["unknown", "unknown"],
    ["2001:db8:1:2::1", "2001:db8:1:2::/64"],
    ["2001:0db8:0001:0002:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"],
    ["[2001:db8:1:2::5]", "2001:db8:1:2::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
    ["::ffff:192.0.2.1", "192.0.2.1"],
    ["::ffff:c000:201", "192.0.2.1"],
  ];
  for (const [addr, group] of cases) {
    assert.equal(addressGroup(addr), group, addr);
  }
  const rl = new RateLimiter({
    kv: {} as Deno.Kv,
    limit: 1,
    now: () => 0,
    subjectKey: new Uint8Array(32),
  });
  assert.equal(
    rl.addressSubject("2001:db8:1:2::1"),
    rl.addressSubject("2001:db8:1:2::9"),
  );
  assert.notEqual(
    rl.addressSubject("2001:db8:1:2::1"),
    rl.addressSubject("2001:db8:1:3::1"),
  );
  assert.match(rl.addressSubject("192.0.2.1"), /^a:[0-9a-f]{64}$/);
});
