/** Shared test fixtures: the real app on `:memory:` KV with an injectable clock and log. */
import { type App, createApp } from "../app.ts";
import { memoryLogger } from "../lib/log.ts";

/** A clock tests move by hand. */
export class TestClock {
  constructor(public t = Date.UTC(2026, 10, 22, 12, 0, 0)) {}
  now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

/** A `TestClock` at the start of a rate-limit window (60 s), so a whole window lies ahead. */
export function windowClock(): TestClock {
  const t = new TestClock();
  t.t = Math.floor(t.t / 60_000) * 60_000;
  return t;
}

/** The admin credential every test app accepts. */
export const TEST_ADMIN_KEY = "test-admin-key-0123456789abcdefghijklmnop";
export const TEST_TOKEN_SECRET = "test-token-secret-0123456789abcdefghijklmnop";

export interface TestApp {
  app: App;
  log: ReturnType<typeof memoryLogger>;
  clock: TestClock | undefined;
  /** Calls the app's handler with a request for `path` on http://localhost. */
  request(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

/**
 * Builds the real app on `:memory:` KV. `env` overrides the defaults; pass a `TestClock`
 * to drive time by hand (the app's clock is the real one otherwise), and `kv` for
 * instances sharing one store (the caller closes it).
 */
export async function testApp(
  env: Record<string, string | undefined> = {},
  options: { clock?: TestClock; kv?: Deno.Kv } = {},
): Promise<TestApp> {
  const log = memoryLogger();
  const app = await createApp({
    kv: options.kv,
    env: {
      KV_PATH: ":memory:",
      TOKEN_SECRET: TEST_TOKEN_SECRET,
      ADMIN_API_KEY: TEST_ADMIN_KEY,
      ...env,
    },
    log,
    now: options.clock?.now,
  });
  return {
    app,
    log,
    clock: options.clock,
    request: (path, init) =>
      app.handler(new Request(`http://localhost${path}`, init)),
    close: () => app.close(),
  };
}

/** A create body of an `external_engine` session on `url` (nothing connects at create). */
export function engineCreateBody(
  url = "wss://engine.example.com/v1",
): Record<string, unknown> {
  return {
    provider_type: "external_engine",
    provider_config: {
      external_engine: {
        url,
        auth_headers: { authorization: "Bearer engine-secret" },
      },
    },
  };
}

/** Headers for a JSON request authenticated with `key`. */
export function authJson(
  key: string,
  extra: Record<string, string> = {},
): HeadersInit {
  return {
    authorization: `Bearer ${key}`,
    "content-type": "application/json",
    ...extra,
  };
}
