/**
 * Shared by the API-key tests: a hand-moved clock, deps on `:memory:` KV driven by it,
 * and an assertion that a promise rejects with a given `ApiError` code (and param).
 */
import assert from "node:assert/strict";
import type { AppDeps } from "../../../lib/deps.ts";
import { createDeps } from "../../../lib/wire.ts";
import { ApiError, type ErrorCode } from "../../../lib/api/errors.ts";
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
