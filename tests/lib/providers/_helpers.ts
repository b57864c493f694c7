/**
 * Setup shared by the adapter tests: starting an engine, streaming user audio, and the
 * per-turn error every adapter must survive.
 */
import assert from "node:assert/strict";
import type {
  EngineConnection,
  EngineEvents,
  EngineFactory,
  ProviderCredentials,
} from "../../../lib/providers/port.ts";
import {
  type RecordedEvents,
  recordEvents,
  tone,
  type Waiter,
} from "../../fakes/fake_ws.ts";

/** Starts `factory` for `credentials`; by default recording nothing, never aborted. */
export function startEngine(
  factory: EngineFactory,
  credentials: ProviderCredentials,
  opts: { events?: EngineEvents; sessionId?: string; signal?: AbortSignal } =
    {},
): Promise<EngineConnection> {
  return factory({
    sessionId: opts.sessionId ?? "session:x",
    credentials,
    events: opts.events ?? recordEvents(),
    signal: opts.signal ?? new AbortController().signal,
  });
}

/** Sends one second of a tone at `rate` as 50 chunks of 20 ms. */
export function sendOneSecond(conn: EngineConnection, rate: number): void {
  for (let i = 0; i < 50; i++) conn.sendUserAudio(tone(rate / 50, rate), rate);
}

/**
 * Waits until the peer has `expected` samples (`count()`, give or take the resampler's
 * edge) and asserts the count is within 2 of it.
 */
export async function expectSamples(
  waiter: Waiter,
  count: () => number,
  expected: number,
): Promise<void> {
  await waiter.until(() => count() >= expected - 10, "resampled audio");
  const got = count();
  assert.ok(Math.abs(got - expected) <= 2, `got ${got} samples`);
}

/**
 * Sends the text "fail" (every fake answers it with a failed turn), waits until
 * `done()`, and asserts that `error` arrived as the one non-fatal error and that the
 * session is still open.
 */
export async function expectTurnError(
  conn: EngineConnection,
  events: RecordedEvents,
  done: () => boolean,
  error: { code: string; message: string },
): Promise<void> {
  conn.sendText("fail");
  await events.waiter.until(done, "the failed turn");
  assert.deepEqual(events.errors, [{
    code: error.code,
    fatal: false,
    message: error.message,
  }]);
  assert.equal(events.closes.length, 0);
}
