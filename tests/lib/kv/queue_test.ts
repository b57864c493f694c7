import assert from "node:assert/strict";
import { testApp } from "../../_helpers.ts";
import {
  isQueueMessage,
  queueShutdownSignal,
  registerQueueHandler,
  startQueue,
} from "../../../lib/kv/queue.ts";

/** A promise with its resolver. */
function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

Deno.test("isQueueMessage() needs a string kind", () => {
  assert.equal(isQueueMessage({ kind: "webhook" }), true);
  assert.equal(isQueueMessage({ kind: 1 }), false);
  assert.equal(isQueueMessage(null), false);
  assert.equal(isQueueMessage("webhook"), false);
});

Deno.test("registerQueueHandler() dispatches messages by kind", async () => {
  const t0 = await testApp();
  const deps = t0.app.deps;
  try {
    const a: unknown[] = [];
    const b: unknown[] = [];
    const gotB = deferred();
    registerQueueHandler(deps, "test_a", (m) => {
      a.push(m);
    });
    registerQueueHandler(deps, "test_b", (m) => {
      b.push(m);
      gotB.resolve();
    });
    await deps.kv.enqueue({ kind: "test_b", n: 2 });
    await gotB.promise;
    assert.deepEqual(b, [{ kind: "test_b", n: 2 }]);
    assert.deepEqual(a, []);
  } finally {
    await t0.close();
  }
});

Deno.test("registerQueueHandler() refuses a second handler for a kind", async () => {
  const t0 = await testApp();
  try {
    assert.throws(
      () => registerQueueHandler(t0.app.deps, "webhook", () => {}),
      /already registered/,
    );
  } finally {
    await t0.close();
  }
});

Deno.test("a handler that throws gets its message again", async () => {
  const t0 = await testApp();
  const deps = t0.app.deps;
  try {
    let calls = 0;
    const done = deferred();
    registerQueueHandler(deps, "test_flaky", () => {
      calls++;
      if (calls === 1) throw new Error("first time fails");
      done.resolve();
    });
    await deps.kv.enqueue({ kind: "test_flaky" }, { backoffSchedule: [10] });
    await done.promise;
    assert.equal(calls, 2);
    assert.ok(t0.log.lines.some((l) => l.includes("queue handler failed")));
  } finally {
    await t0.close();
  }
});

Deno.test("a message of an unknown kind is retried, not lost", async () => {
  const t0 = await testApp();
  const deps = t0.app.deps;
  try {
    const done = deferred<unknown>();
    await deps.kv.enqueue({ kind: "test_late", v: 1 }, {
      backoffSchedule: [50, 50, 50, 50, 50],
    });
    for (
      let i = 0;
      !t0.log.lines.some((l) => l.includes("unknown kind"));
      i++
    ) {
      assert.ok(i < 2000, "the unknown kind was never logged");
      await new Promise((r) => setTimeout(r, 10));
    }
    registerQueueHandler(deps, "test_late", (m) => done.resolve(m));
    assert.deepEqual(await done.promise, { kind: "test_late", v: 1 });
  } finally {
    await t0.close();
  }
});

Deno.test("close() aborts the shutdown signal and waits for running handlers", async () => {
  const t0 = await testApp();
  const deps = t0.app.deps;
  startQueue(deps); // idempotent: initServices already started it
  const started = deferred();
  let finished = false;
  registerQueueHandler(deps, "test_slow", async () => {
    started.resolve();
    const signal = queueShutdownSignal(deps);
    await new Promise((r) => signal.addEventListener("abort", r));
    await new Promise((r) => setTimeout(r, 20));
    finished = true;
  });
  await deps.kv.enqueue({ kind: "test_slow" });
  await started.promise;
  assert.equal(queueShutdownSignal(deps).aborted, false);
  await t0.close();
  assert.equal(queueShutdownSignal(deps).aborted, true);
  assert.equal(finished, true);
});
