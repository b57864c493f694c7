/**
 * A throw anywhere an engine connection runs from an event (socket handlers, timers, the
 * media plane's `EngineEvents` callbacks) fails that session and nothing else: the test
 * process (like the service) would die of an uncaught error otherwise.
 */
import assert from "node:assert/strict";
import type { EngineEvents } from "../../../lib/ports/providers.ts";
import { createVendorCEngine } from "../../../lib/providers/vendor_c.ts";
import { connectWs } from "../../../lib/providers/ws_client.ts";
import {
  providerDeps,
  type RecordedEvents,
  recordEvents,
  startFakeWs,
} from "../../fakes/fake_ws.ts";
import { startProviderKit } from "../../fakes/providers.ts";
import { readyEngine, startEngine } from "./_helpers.ts";

/** `events` whose `name` callback throws (or rejects, when `async`). */
function throwingIn(
  events: RecordedEvents,
  name: keyof EngineEvents,
  async = false,
): RecordedEvents {
  const original = events[name] as (...a: unknown[]) => void;
  return Object.assign(events, {
    [name]: (...args: unknown[]) => {
      original(...args);
      if (async) return Promise.reject(new TypeError("media plane broke"));
      throw new TypeError("media plane broke");
    },
  });
}

async function expectFailedOnce(events: RecordedEvents): Promise<void> {
  await events.waiter.until(() => events.closes.length > 0, "close");
  assert.deepEqual(events.closes, [{ clean: false, reason: "adapter fault" }]);
  assert.deepEqual(events.errors.filter((e) => e.fatal), [{
    code: "llm_failed",
    fatal: true,
    message: "engine connection failed",
  }]);
}

Deno.test("a throwing EngineEvents callback fails its session, not the process", async (t) => {
  const cases: [keyof EngineEvents, boolean][] = [
    ["onResponseStart", false],
    ["onAgentAudio", false],
    ["onTranscript", true],
    ["onResponseEnd", false],
  ];
  for (const [name, async] of cases) {
    await t.step(`${name}${async ? " (async, rejecting)" : ""}`, async () => {
      const events = throwingIn(recordEvents(), name, async);
      const { kit, deps, peer, close } = await readyEngine("external_engine", {
        events,
      });
      try {
        peer.send({ type: "response.start", response_id: "r" });
        peer.send(new Uint8Array(64));
        peer.send({ type: "transcript", role: "agent", text: "t" });
        peer.send({ type: "response.end", response_id: "r" });
        await expectFailedOnce(events);
        await kit.fake.waiter.until(() => peer.closed, "engine socket closed");
        assert.ok(
          deps.log.lines.some((l) => l.includes("engine handler failed")),
        );
        assert.ok(
          deps.log.lines.every((l) => !l.includes("media plane broke")),
        );
      } finally {
        await close();
      }
    });
  }

  await t.step(
    "onError and onClose throwing too: still one close, no loop",
    async () => {
      const events = throwingIn(
        throwingIn(throwingIn(recordEvents(), "onResponseStart"), "onError"),
        "onClose",
      );
      const { kit, peer, close } = await readyEngine("external_engine", {
        events,
      });
      try {
        peer.send({ type: "response.start", response_id: "r" });
        await expectFailedOnce(events);
        await kit.fake.waiter.until(() => peer.closed, "engine socket closed");
      } finally {
        await close();
      }
    },
  );
});

Deno.test("a throw from an adapter timer fails its session, not the process", async () => {
  const kit = startProviderKit("vendor_c");
  const deps = providerDeps({ endpoints: kit.endpoints });
  const events = throwingIn(recordEvents(), "onResponseEnd");
  const conn = await startEngine(
    createVendorCEngine(deps, { responseIdleMs: 50 }),
    kit.credentials,
    { events },
  );
  try {
    await events.waiter.until(() => events.ready.length > 0, "ready");
    conn.sendText("hello"); // a reply with audio; the idle timer ends the response
    await expectFailedOnce(events);
    assert.equal(events.ends.length, 1);
  } finally {
    conn.close();
    await kit.fake.close();
  }
});

Deno.test("a throwing EngineConnection call from the media plane is contained too", async () => {
  const e = await readyEngine("external_engine");
  try {
    // Text JSON cannot carry (the media plane sends strings; this one is not).
    e.conn.sendText(1n as unknown as string);
    await e.events.waiter.until(() => e.events.closes.length > 0, "close");
    assert.equal(e.events.closes[0].reason, "adapter fault");
  } finally {
    await e.close();
  }
});

Deno.test("connectWs() hands a throwing handler to onFault and closes the socket", async () => {
  const fake = startFakeWs("/x", {
    onOpen: (peer) => peer.send({ type: "boom" }),
  });
  const faults: unknown[] = [];
  let closed = false;
  try {
    const client = await connectWs(new URL(fake.url), {
      connectTimeoutMs: 5000,
      onMessage: () => {
        throw new Error("handler bug");
      },
      onClose: () => {
        closed = true;
        throw new Error("close handler bug");
      },
      onFault: (err) => {
        faults.push(err);
        throw new Error("fault handler bug");
      },
    });
    await fake.waiter.until(() => fake.peers[0]?.closed, "socket closed");
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(closed, true);
    assert.equal(client.isOpen, false);
    assert.deepEqual(
      faults.map((e) => (e as Error).message),
      ["handler bug", "close handler bug"],
    );
  } finally {
    await fake.close();
  }
});
