import assert from "node:assert/strict";
import { createLogger, redact, type RequestLogRecord } from "../../lib/log.ts";

function capture(now = () => 0) {
  const lines: string[] = [];
  const log = createLogger((l) => lines.push(l), now, "debug");
  return { log, lines, last: () => JSON.parse(lines[lines.length - 1]) };
}

Deno.test("createLogger", async (t) => {
  await t.step("one JSON line: ts, level, msg, then the fields", () => {
    const { log, lines, last } = capture(() => 1_700_000_000_000);
    log.info("request", { request_id: "r1", status: 200, tenant: undefined });
    assert.equal(lines.length, 1);
    assert.deepEqual(Object.keys(last()), [
      "ts",
      "level",
      "msg",
      "request_id",
      "status",
    ]);
    assert.equal(last().ts, "2023-11-14T22:13:20.000Z");
    assert.equal(last().level, "info");
  });

  await t.step("the timestamp follows the clock line by line", () => {
    let t = 0;
    const { log, lines } = capture(() => t);
    log.info("a");
    log.info("b");
    t = 1500;
    log.info("c");
    assert.deepEqual(lines.map((l) => JSON.parse(l).ts), [
      "1970-01-01T00:00:00.000Z",
      "1970-01-01T00:00:00.000Z",
      "1970-01-01T00:00:01.500Z",
    ]);
  });

  await t.step("secret fields are masked at every depth", () => {
    const { log, last } = capture();
    log.warn("x", {
      authorization: "Bearer abc",
      Token: "t",
      nested: { api_key: "k", ok: "fine", deeper: [{ client_secret: "s" }] },
    });
    const rec = last();
    assert.equal(rec.authorization, "[redacted]");
    assert.equal(rec.Token, "[redacted]");
    assert.equal(rec.nested.api_key, "[redacted]");
    assert.equal(rec.nested.ok, "fine");
    assert.equal(rec.nested.deeper[0].client_secret, "[redacted]");
  });

  await t.step(
    "credentials inside strings, the message and errors are masked",
    () => {
      const { log, lines } = capture();
      log.error("saw avk_01ABC_secretpart in msg", {
        path: "/v1/x?token=abc&y=1",
        note: "Authorization: Bearer eyJhbGciOi.payload.sig",
        err: new Error("bad key avk_01XYZ_zzz"),
      });
      const line = lines[0];
      for (const secret of ["secretpart", "abc&", "eyJhbGciOi", "zzz"]) {
        assert.equal(line.includes(secret), false, secret);
      }
      const rec = JSON.parse(line);
      assert.equal(rec.path, "/v1/x?token=[redacted]&y=1");
      assert.equal(rec.err.message, "bad key avk_[redacted]");
    },
  );

  await t.step("fields may override ts, level and msg in place", () => {
    const { log, last } = capture();
    log.info("m", { msg: "other", level: "custom" });
    assert.deepEqual(Object.keys(last()), ["ts", "level", "msg"]);
    assert.equal(last().msg, "other");
    assert.equal(last().level, "custom");
  });

  await t.step("levels below the minimum are dropped", () => {
    const lines: string[] = [];
    const log = createLogger((l) => lines.push(l), () => 0, "warn");
    log.info("no");
    log.error("yes");
    assert.equal(lines.length, 1);
  });

  await t.step("redact masks the same way as the logger", () => {
    assert.deepEqual(redact({ cookie: "c", a: { password: "p" }, b: 1 }), {
      cookie: "[redacted]",
      a: { password: "[redacted]" },
      b: 1,
    });
  });
});

Deno.test("Logger.request() writes the line info('request', record) writes", async (t) => {
  const records: [string, RequestLogRecord][] = [
    ["a status read", {
      request_id: "req_01KAB3C4D5E6F7G8H9J0KMNPQR",
      method: "GET",
      route: "/v1/sessions/:session_id",
      path: "/v1/sessions/sess_01KAB3C4D5E6F7G8H9J0KMNPQR",
      status: 200,
      duration_ms: 1.23,
      tenant: "acme",
    }],
    ["no tenant, no route", {
      request_id: "r2",
      method: "POST",
      path: "/v1/nowhere",
      status: 404,
      duration_ms: 0,
    }],
    ["secrets in every string field", {
      request_id: "avk_01KAB3C4D5E6F7G8H9J0KMNPQR_secret",
      method: "GET",
      route: "(unmatched)",
      path: '/v1/x?token=abc&api_key=def "quoted" \\ \u0001',
      status: 401,
      duration_ms: Number.NaN,
      tenant: "Bearer abc.def",
    }],
  ];
  for (const [name, record] of records) {
    await t.step(name, () => {
      const fast = capture(() => 1_700_000_000_123);
      const slow = capture(() => 1_700_000_000_123);
      fast.log.request(record);
      slow.log.info("request", { ...record });
      assert.equal(fast.lines[0], slow.lines[0]);
      assert.doesNotMatch(fast.lines[0], /abc|def|secret/);
    });
  }
  await t.step("below the minimum level, nothing", () => {
    const lines: string[] = [];
    const log = createLogger((l) => lines.push(l), () => 0, "warn");
    log.request(records[0][1]);
    assert.deepEqual(lines, []);
  });
});
