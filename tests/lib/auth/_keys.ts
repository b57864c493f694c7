/**
 * Shared by the auth tests: a hand-moved clock, deps on `:memory:` KV driven by it, a
 * KV that counts its round trips, a handler context for a request, and an assertion
 * that a promise rejects with a given `ApiError` code (and param).
 */
import assert from "node:assert/strict";
import type { AppDeps } from "../../../lib/deps.ts";
import { createDeps } from "../../../lib/wire.ts";
import { ApiError, type ErrorCode } from "../../../lib/errors.ts";
import { type Ctx, ResponseHeaders } from "../../../lib/api/http.ts";
import { memoryLogger } from "../../../lib/log.ts";

/** A clock moved by hand (lib tests stay off the app and its route manifest). */
export class TestClock {
  constructor(public t = Date.UTC(2026, 10, 22, 12, 0, 0)) {}
  now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

/** Deps on `:memory:` KV with a `TestClock`. */
export async function setup(): Promise<{ deps: AppDeps; clock: TestClock }> {
  const clock = new TestClock();
  const deps = await createDeps({
    env: { KV_PATH: ":memory:", TOKEN_SECRET: "x".repeat(32) },
    now: clock.now,
    log: memoryLogger(),
  });
  return { deps, clock };
}

/** Asserts that `p` rejects with an `ApiError` of `code` (and `param`, when given). */
export async function rejectsWith(
  p: Promise<unknown>,
  code: ErrorCode,
  param?: string,
): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof ApiError, `expected ApiError, got ${err}`);
    assert.equal(err.code, code);
    if (param !== undefined) assert.equal(err.param, param);
    return true;
  });
}

/** KV calls made through a counting wrapper around a real `:memory:` store. */
export interface CountingKv {
  kv: Deno.Kv;
  calls: Map<string, number>;
  inner: Deno.Kv;
}

/** Wraps a real KV handle so tests can count round trips (every method is forwarded). */
export function countingKv(inner: Deno.Kv): CountingKv {
  const calls = new Map<string, number>();
  const kv = new Proxy(inner, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.set(String(prop), (calls.get(String(prop)) ?? 0) + 1);
        return value.apply(target, args);
      };
    },
  });
  return { kv, calls, inner };
}

/** A handler context for a request with `headers` on `deps`. */
export function ctxFor(deps: AppDeps, headers: HeadersInit = {}): Ctx {
  const req = new Request("http://localhost/v1/x", { headers });
  return {
    req,
    url: new URL(req.url),
    params: {},
    state: { requestId: "r", startedAt: 0, headers: new ResponseHeaders() },
    deps,
    remoteAddr: "127.0.0.1",
    next: () => Promise.reject(new Error("no chain")),
  };
}
