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
  ProviderType,
} from "../../../lib/ports/providers.ts";
import { engineFactoryFor } from "../../../lib/providers/registry.ts";
import {
  providerDeps,
  type RecordedEvents,
  recordEvents,
  tone,
  type Waiter,
} from "../../fakes/fake_ws.ts";
import { startProviderKit } from "../../fakes/providers.ts";

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

/** A ready connection to the fake of `type`, on a clock the test drives. */
export async function readyEngine(
  type: ProviderType,
  opts: { events?: RecordedEvents } = {},
) {
  const kit = startProviderKit(type);
  let t = 1_000_000;
  const clock = { now: () => t, advance: (ms: number) => t += ms };
  const deps = providerDeps({ endpoints: kit.endpoints, now: clock.now });
  const events = opts.events ?? recordEvents();
  const conn = await startEngine(
    engineFactoryFor(deps, type),
    kit.credentials,
    {
      events,
      sessionId: `session:${type}`,
    },
  );
  await events.waiter.until(() => events.ready.length > 0, "ready");
  const peer = await kit.fake.peer();
  let n = 0;
  /** Sends the marker and waits for its transcript: every earlier frame was handled. */
  const sync = async () => {
    const text = `marker-${++n}`;
    peer.send(kit.marker(text));
    await events.waiter.until(
      () =>
        kit.markerSeen?.(events, text) ??
          events.transcripts.some((x) => x.text === text),
      text,
    );
  };
  const invalid = () => conn.invalidFrames?.() ?? -1;
  return {
    kit,
    deps,
    clock,
    events,
    conn,
    peer,
    sync,
    invalid,
    async close() {
      conn.close();
      await kit.fake.close();
    },
  };
}
