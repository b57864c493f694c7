/**
 * Webhook test fixtures: a real https receiver on 127.0.0.1 (the test CA's localhost
 * certificate; run with `DENO_CERT=tests/fixtures/tls/ca.crt`), synthetic session moves
 * through a real atomic commit, and polling helpers.
 */
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import type { AppDeps } from "../../../lib/deps.ts";
import { OPERATOR } from "../../../lib/principal.ts";
import {
  getWebhookSecret,
  type WebhookAttempt,
  type WebhookEventBody,
  type WebhookEventRecord,
} from "../../../lib/webhooks/index.ts";

const TLS_DIR = new URL("../../fixtures/tls/", import.meta.url);

/** App env for delivery tests: loopback receivers allowed, quick retries. */
export const WEBHOOK_ENV = {
  ALLOW_PRIVATE_NETWORK_TARGETS: "true",
  WEBHOOK_RETRY_SCHEDULE_MS: "50,100",
};

export interface Received {
  headers: Record<string, string>;
  body: string;
}

/** Answers request number `n` (1-based). */
export type Responder = (
  n: number,
  req: Request,
) => Response | Promise<Response>;

export interface Receiver {
  /** `https://127.0.0.1:<port>/hook` */
  url: string;
  received: Received[];
  /** Resolves once `count` requests have arrived. */
  waitFor(count: number): Promise<void>;
  close(): Promise<void>;
}

/** Starts an https receiver that records every request and answers with `respond`. */
export function startReceiver(
  respond: Responder = () => new Response("ok"),
): Receiver {
  const received: Received[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: Deno.readTextFileSync(new URL("localhost.crt", TLS_DIR)),
    key: Deno.readTextFileSync(new URL("localhost.key", TLS_DIR)),
    onListen() {},
  }, async (req) => {
    const body = await req.text();
    received.push({ headers: Object.fromEntries(req.headers), body });
    const n = received.length;
    for (const w of waiters.splice(0)) {
      if (received.length >= w.count) w.resolve();
      else waiters.push(w);
    }
    return await respond(n, req);
  });
  return {
    url: `https://127.0.0.1:${server.addr.port}/hook`,
    received,
    waitFor(count) {
      if (received.length >= count) return Promise.resolve();
      return guard(
        new Promise<void>((resolve) => waiters.push({ count, resolve })),
        `${count} webhook requests`,
      );
    },
    close: () => server.shutdown(),
  };
}

/** Rejects if `p` has not settled within 20 s: a hang guard, not a timing assertion. */
async function guard<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`gave up waiting for ${what}`)),
          20_000,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `fn` every 10 ms until it returns a value other than undefined. */
export async function waitUntil<T>(
  fn: () => Promise<T | undefined> | T | undefined,
  what: string,
): Promise<T> {
  return await guard(
    (async () => {
      for (;;) {
        const v = await fn();
        if (v !== undefined) return v;
        await new Promise((r) => setTimeout(r, 10));
      }
    })(),
    what,
  );
}

/** Every webhook event record in KV, oldest first. */
export async function allEvents(deps: AppDeps): Promise<WebhookEventRecord[]> {
  const out: WebhookEventRecord[] = [];
  for await (
    const e of deps.kv.list<WebhookEventRecord>({ prefix: ["webhook_events"] })
  ) out.push(e.value);
  return out;
}

/** Event `id`'s record as stored, or null. */
export async function readEvent(
  deps: AppDeps,
  id: string,
): Promise<WebhookEventRecord | null> {
  return (await deps.kv.get<WebhookEventRecord>(["webhook_events", id])).value;
}

/**
 * Creates a session with `webhook_url: url` through a real move (asserting it commits)
 * and returns the id of the one webhook event it queued.
 */
export async function sendOneEvent(
  deps: AppDeps,
  url: string,
): Promise<string> {
  assert.ok(await fakeMove(deps, null, fakeSession({ webhook_url: url })));
  const [event] = await allEvents(deps);
  return event.event_id;
}

/** Waits until event `id` is in state `state` and returns it. */
export async function waitForState(
  deps: AppDeps,
  id: string,
  state: WebhookEventRecord["state"],
): Promise<WebhookEventRecord> {
  return await waitUntil(async () => {
    const v = await readEvent(deps, id);
    return v?.state === state ? v : undefined;
  }, `event ${id} to be ${state}`);
}

let seq = 0;

/** A session record shaped like lib/sessions.ts's, with secrets a body must not leak. */
export function fakeSession(
  fields: Record<string, unknown> = {},
): Record<string, unknown> {
  seq++;
  return {
    session_id: `session:test${seq}${crypto.randomUUID().slice(0, 8)}`,
    tenant_id: "tenant_a",
    status: "created",
    provider_type: "external_engine",
    transport: "websocket_fmp4",
    avatar_id: "avatar_default",
    bg_id: "bg_default",
    created_at: Date.now(),
    owner: "instance-1",
    timeline: [{ status: "created", at: Date.now() }],
    provider_config: {
      external_engine: {
        url: "wss://engine.example/ws?token=SECRET_URL_TOKEN",
        auth_headers: { authorization: "Bearer SECRET_ENGINE_BEARER" },
      },
    },
    client_token: "SECRET_CLIENT_TOKEN",
    session_token: "SECRET_SESSION_TOKEN",
    ...fields,
  };
}

/** Strings in `fakeSession` that must never reach a webhook body. */
export const FAKE_SECRETS = [
  "SECRET_URL_TOKEN",
  "SECRET_ENGINE_BEARER",
  "SECRET_CLIENT_TOKEN",
  "SECRET_SESSION_TOKEN",
];

/**
 * Makes a session move the way lib/sessions.ts does: one atomic operation holding the
 * record write and every `inCommit` hook; `afterCommit` hooks after. Returns the
 * commit's `ok`.
 */
export async function fakeMove(
  deps: AppDeps,
  before: Record<string, unknown> | null,
  after: Record<string, unknown>,
  options: { failCheck?: boolean } = {},
): Promise<boolean> {
  const key = ["test_sessions", after.session_id as string];
  const op = deps.kv.atomic();
  if (options.failCheck) {
    op.check({ key, versionstamp: "00000000000000ff0000" });
  }
  op.set(key, after);
  for (const hook of deps.sessionHooks.inCommit) {
    hook(op, before as never, after as never);
  }
  const res = await op.commit();
  if (res.ok) {
    for (const hook of deps.sessionHooks.afterCommit) {
      hook(before as never, after as never);
    }
  }
  return res.ok;
}

/** The delivery attempts KV holds for event `id`. */
export async function attemptsOf(
  deps: AppDeps,
  id: string,
): Promise<WebhookAttempt[]> {
  const out: WebhookAttempt[] = [];
  for await (
    const e of deps.kv.list<WebhookAttempt>({
      prefix: ["webhook_attempts", id],
    })
  ) out.push(e.value);
  return out;
}

/** Verifies a received delivery with the tenant's webhook secret; its body. */
export async function verify(deps: AppDeps, tenant: string, r: Received) {
  const { secret } = await getWebhookSecret(deps, OPERATOR, tenant);
  return new Webhook(secret).verify(r.body, r.headers) as WebhookEventBody;
}

/** Creates a session with a webhook and waits for its session.created event record. */
export async function createWithWebhook(
  deps: AppDeps,
  url: string,
  fields: Record<string, unknown> = {},
): Promise<{ session: Record<string, unknown>; event: WebhookEventRecord }> {
  const session = fakeSession({ webhook_url: url, ...fields });
  assert.equal(await fakeMove(deps, null, session), true);
  const event = (await allEvents(deps)).find((e) =>
    e.session_id === session.session_id
  );
  assert.ok(event, "the create committed an event record");
  return { session, event };
}
