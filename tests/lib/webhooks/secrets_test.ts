import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { testApp, TestClock } from "../../_helpers.ts";
import { ConfigError } from "../../../lib/config.ts";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import {
  generateSecret,
  getWebhookSecret,
  rotateWebhookSecret,
  signatureHeaders,
  signOne,
  startWebhooks,
} from "../../../lib/webhooks/index.ts";
import type { AppDeps } from "../../../lib/deps.ts";
import {
  allEvents,
  fakeMove,
  fakeSession,
  type Receiver,
  startReceiver,
  waitForState,
} from "./_helpers.ts";
import { OPERATOR } from "../../../lib/principal.ts";

const ENV = {
  ALLOW_PRIVATE_NETWORK_TARGETS: "true",
  WEBHOOK_RETRY_SCHEDULE_MS: "50",
};
const HOUR = 3600 * 1000;

/** Sends one event for `tenant` and returns the request the receiver got. */
async function deliverOne(deps: AppDeps, rx: Receiver, tenant: string) {
  const session = fakeSession({ webhook_url: rx.url, tenant_id: tenant });
  assert.ok(await fakeMove(deps, null, session));
  const event = (await allEvents(deps)).find((e) =>
    e.session_id === session.session_id
  )!;
  await waitForState(deps, event.event_id, "delivered");
  return rx.received.find((r) => r.headers["webhook-id"] === event.event_id)!;
}

/** Every KV value, as JSON text, that contains `needle`. */
async function kvHolding(deps: AppDeps, needle: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of deps.kv.list({ prefix: [] })) {
    const text = JSON.stringify(
      e.value,
      (_k, v) =>
        typeof v === "bigint"
          ? String(v)
          : v instanceof Uint8Array
          ? new TextDecoder().decode(v)
          : v,
    );
    if (text.includes(needle)) out.push(JSON.stringify(e.key));
  }
  return out;
}

/**
 * DECISIONS 8's derivation, computed with WebCrypto (independently of lib/): HKDF-SHA256,
 * input key the decoded WEBHOOK_SECRET, empty salt, info "webhook:" + tenant, 32 bytes.
 */
async function hkdfSecret(envSecret: string, tenant: string): Promise<string> {
  const ikm = Uint8Array.from(
    atob(envSecret.slice("whsec_".length)),
    (c) => c.charCodeAt(0),
  );
  const key = await crypto.subtle.importKey("raw", ikm, "HKDF", false, [
    "deriveBits",
  ]);
  const bits = new Uint8Array(
    await crypto.subtle.deriveBits(
      {
        name: "HKDF",
        hash: "SHA-256",
        salt: new Uint8Array(0),
        info: new TextEncoder().encode(`webhook:${tenant}`),
      },
      key,
      256,
    ),
  );
  return "whsec_" + btoa(String.fromCharCode(...bits));
}

Deno.test("signOne() matches the standardwebhooks reference", () => {
  const secret = generateSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  const body = JSON.stringify({ type: "session.created", n: "é✓" });
  const ts = 1_790_000_000;
  assert.equal(
    signOne(secret, "msg_1", ts, body),
    new Webhook(secret).sign("msg_1", new Date(ts * 1000), body),
  );
  const headers = signatureHeaders(
    [secret, generateSecret()],
    "msg_1",
    ts,
    body,
  );
  assert.equal(headers["webhook-id"], "msg_1");
  assert.equal(headers["webhook-timestamp"], String(ts));
  assert.equal(headers["webhook-signature"].split(" ").length, 2);
});

Deno.test("startWebhooks() refuses an unusable WEBHOOK_SECRET", async (t) => {
  for (const bad of ["whsec_not base64!", "whsec_c2hvcnQ=", "whsec_"]) {
    await t.step(bad, async () => {
      const deps = await createDeps({
        env: { KV_PATH: ":memory:", WEBHOOK_SECRET: bad },
      });
      try {
        assert.throws(() => startWebhooks(deps), ConfigError);
      } finally {
        await closeDeps(deps);
      }
    });
  }
});

Deno.test("webhooks: without WEBHOOK_SECRET a tenant secret is created on first use", async () => {
  const rx = startReceiver();
  const t0 = await testApp(ENV);
  const deps = t0.app.deps;
  try {
    const r = await deliverOne(deps, rx, "tenant_lazy");
    const view = await getWebhookSecret(deps, OPERATOR, "tenant_lazy");
    assert.equal(view.source, "tenant");
    assert.equal(
      (await getWebhookSecret(deps, OPERATOR, "tenant_lazy")).secret,
      view.secret,
    );
    new Webhook(view.secret).verify(r.body, r.headers);
    const other = await getWebhookSecret(deps, OPERATOR, "tenant_other");
    assert.notEqual(other.secret, view.secret);
    assert.throws(() => new Webhook(other.secret).verify(r.body, r.headers));
  } finally {
    await t0.close();
    await rx.close();
  }
});

Deno.test("webhooks: with WEBHOOK_SECRET each tenant's deliveries verify only with its own derived secret", async (t) => {
  const rx = startReceiver();
  const envSecret = generateSecret();
  const t0 = await testApp({ ...ENV, WEBHOOK_SECRET: envSecret });
  const deps = t0.app.deps;
  try {
    const a = await deliverOne(deps, rx, "tenant_a");
    const b = await deliverOne(deps, rx, "tenant_b");
    const secretA = await hkdfSecret(envSecret, "tenant_a");
    const secretB = await hkdfSecret(envSecret, "tenant_b");
    await t.step(
      "the console shows each tenant its derived secret",
      async () => {
        assert.deepEqual(await getWebhookSecret(deps, OPERATOR, "tenant_a"), {
          secret: secretA,
          source: "derived",
        });
        assert.equal(
          (await getWebhookSecret(deps, OPERATOR, "tenant_b")).secret,
          secretB,
        );
        assert.match(secretA, /^whsec_[A-Za-z0-9+/]{43}=$/);
        assert.notEqual(secretA, secretB);
      },
    );
    await t.step(
      "each delivery verifies with its tenant's secret alone",
      () => {
        new Webhook(secretA).verify(a.body, a.headers);
        new Webhook(secretB).verify(b.body, b.headers);
        assert.throws(() => new Webhook(secretB).verify(a.body, a.headers));
        assert.throws(() => new Webhook(secretA).verify(b.body, b.headers));
      },
    );
    await t.step("WEBHOOK_SECRET itself verifies neither", () => {
      assert.throws(() => new Webhook(envSecret).verify(a.body, a.headers));
      assert.throws(() => new Webhook(envSecret).verify(b.body, b.headers));
    });
    await t.step("no secret reaches KV", async () => {
      for (const s of [envSecret, secretA, secretB]) {
        assert.deepEqual(await kvHolding(deps, s.slice(6)), []);
      }
    });
  } finally {
    await t0.close();
    await rx.close();
  }
});

Deno.test("webhooks: rotation signs with both secrets for 24 h, then with the new one", async (t) => {
  const rx = startReceiver();
  const envSecret = generateSecret();
  const clock = new TestClock(Date.now() - 23 * HOUR);
  const t0 = await testApp({ ...ENV, WEBHOOK_SECRET: envSecret }, { clock });
  const deps = t0.app.deps;
  try {
    const derived = await hkdfSecret(envSecret, "tenant_r");
    await t.step(
      "a tenant without its own signs with a secret derived from WEBHOOK_SECRET",
      async () => {
        assert.deepEqual(await getWebhookSecret(deps, OPERATOR, "tenant_r"), {
          secret: derived,
          source: "derived",
        });
      },
    );

    const rotated = await rotateWebhookSecret(deps, OPERATOR, "tenant_r");
    await t.step("rotation gives the tenant its own secret", () => {
      assert.equal(rotated.source, "tenant");
      assert.notEqual(rotated.secret, envSecret);
      assert.equal(rotated.previous_until, clock.now() + 24 * HOUR);
    });
    await t.step(
      "KV never holds WEBHOOK_SECRET or the derived secret",
      async () => {
        assert.deepEqual(await kvHolding(deps, envSecret.slice(6)), []);
        assert.deepEqual(await kvHolding(deps, derived.slice(6)), []);
        const record = await deps.kv.get<Record<string, unknown>>([
          "webhook_secrets",
          "tenant_r",
        ]);
        assert.equal(record.value?.previous, undefined);
        assert.equal(record.value?.previous_from, "env");
      },
    );

    clock.advance(23 * HOUR); // back at the real time, 1 h of overlap left
    await t.step("during the overlap both signatures verify", async () => {
      const r = await deliverOne(deps, rx, "tenant_r");
      assert.equal(r.headers["webhook-signature"].split(" ").length, 2);
      new Webhook(derived).verify(r.body, r.headers);
      new Webhook(rotated.secret).verify(r.body, r.headers);
      assert.throws(() => new Webhook(envSecret).verify(r.body, r.headers));
      assert.throws(() =>
        new Webhook(generateSecret()).verify(r.body, r.headers)
      );
      assert.deepEqual(await kvHolding(deps, envSecret.slice(6)), []);
    });

    clock.advance(2 * HOUR);
    await t.step("after the overlap only the new secret signs", async () => {
      const r = await deliverOne(deps, rx, "tenant_r");
      const id = r.headers["webhook-id"];
      const at = new Date(Number(r.headers["webhook-timestamp"]) * 1000);
      assert.equal(
        r.headers["webhook-signature"],
        new Webhook(rotated.secret).sign(id, at, r.body),
      );
      assert.deepEqual(await getWebhookSecret(deps, OPERATOR, "tenant_r"), {
        secret: rotated.secret,
        source: "tenant",
      });
    });

    await t.step("an expired previous secret is dropped from KV", async () => {
      const record = await deps.kv.get<Record<string, unknown>>([
        "webhook_secrets",
        "tenant_r",
      ]);
      assert.deepEqual(Object.keys(record.value ?? {}).sort(), [
        "created_at",
        "current",
        "rotated_at",
      ]);
    });

    await t.step(
      "a second rotation drops the oldest secret at once",
      async () => {
        const again = await rotateWebhookSecret(deps, OPERATOR, "tenant_r");
        const r = await deliverOne(deps, rx, "tenant_r");
        const id = r.headers["webhook-id"];
        const at = new Date(Number(r.headers["webhook-timestamp"]) * 1000);
        assert.deepEqual(r.headers["webhook-signature"].split(" "), [
          new Webhook(again.secret).sign(id, at, r.body),
          new Webhook(rotated.secret).sign(id, at, r.body),
        ]);
      },
    );

    await t.step(
      "past the overlap a delivery drops the replaced tenant secret from KV",
      async () => {
        clock.advance(25 * HOUR);
        const r = await deliverOne(deps, rx, "tenant_r");
        assert.equal(r.headers["webhook-signature"].split(" ").length, 1);
        assert.deepEqual(await kvHolding(deps, rotated.secret.slice(6)), []);
      },
    );
  } finally {
    await t0.close();
    await rx.close();
  }
});
