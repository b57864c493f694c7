import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import type { ServerMessage } from "../../../lib/media/protocol.ts";
import { createJanusSfu } from "../../../lib/sfu/janus.ts";
import { SfuLink } from "../../../lib/media/sfu_signalling.ts";
import { SFU_RECOVERY_MS } from "../../../lib/sfu/recovery.ts";
import { janusSessions, type RunningJanus, startTestJanus } from "./_janus.ts";

Deno.test("SfuLink sends the SFU's offer first, its trickled candidates after it, and closes the viewer with the socket", async () => {
  const j = await startTestJanus();
  const sfu = createJanusSfu({
    url: j.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
  });
  try {
    const mp = await sfu.createMountpoint("session:SIG");
    const sent: ServerMessage[] = [];
    const failed: string[] = [];
    const link = new SfuLink(sfu, mp, memoryLogger(), "session:SIG", {
      send: (_ws, msg) => sent.push(msg),
      onFlowing: () => {},
      onViewerFailed: (r) => failed.push(r),
      onLost: (r) => failed.push(r),
    });
    const ws = {} as WebSocket;
    link.attach(ws);
    for (let i = 0; i < 100; i++) {
      if (sent.some((m) => m.type === "webrtc.candidate")) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(sent[0]?.type, "webrtc.offer");
    assert.ok(
      sent.slice(1).length > 0 &&
        sent.slice(1).every((m) => m.type === "webrtc.candidate"),
      JSON.stringify(sent.map((m) => m.type)),
    );
    assert.deepEqual(failed, []);
    link.detach(ws);
    for (let i = 0; i < 50; i++) {
      if ((await viewers(j)) === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(await viewers(j), 0);
    await link.close();
  } finally {
    await j.stop();
  }
});

/** Janus sessions alive (each viewer has its own). */
async function viewers(j: RunningJanus): Promise<number> {
  return (await janusSessions(j)).length;
}

/** Polls `cond` every 50 ms until it holds (the test's own timeout bounds it). */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never: ${what}`);
}

Deno.test("SfuLink: Janus killed under a viewer: onLost once the SFU stayed silent for SFU_RECOVERY_MS, never the non-fatal onViewerFailed", async () => {
  const j = await startTestJanus();
  const sfu = createJanusSfu({
    url: j.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
  });
  try {
    const mp = await sfu.createMountpoint("session:LOST");
    const sent: ServerMessage[] = [];
    const failed: string[] = [];
    const lost: string[] = [];
    const link = new SfuLink(sfu, mp, memoryLogger(), "session:LOST", {
      send: (_ws, msg) => sent.push(msg),
      onFlowing: () => {},
      onViewerFailed: (r) => failed.push(r),
      onLost: (r) => lost.push(r),
    });
    const ws = {} as WebSocket;
    link.attach(ws);
    await until(() => sent.some((m) => m.type === "webrtc.offer"), "offer");
    Deno.kill(j.pid, "SIGKILL");
    await j.exited;
    await until(() => lost.length > 0, "onLost");
    assert.deepEqual(lost, [
      `the SFU did not answer for ${SFU_RECOVERY_MS / 1000} s`,
    ]);
    assert.deepEqual(failed, []);
    // A socket that takes over meanwhile gets no offer from a lost SFU.
    link.attach({} as WebSocket);
    await link.close();
    assert.equal(sent.filter((m) => m.type === "webrtc.offer").length, 1);
  } finally {
    await j.stop();
  }
});

Deno.test("SfuLink: an SFU unreachable for a moment, back with the mountpoint within SFU_RECOVERY_MS: the socket is offered a new viewer, the session is not lost", async () => {
  const j = await startTestJanus();
  const proxy = cuttableProxy(j.url);
  const sfu = createJanusSfu({
    url: proxy.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
    ingestHost: "127.0.0.1",
  });
  try {
    const mp = await sfu.createMountpoint("session:BLIP");
    const sent: ServerMessage[] = [];
    const failed: string[] = [];
    const lost: string[] = [];
    const link = new SfuLink(sfu, mp, memoryLogger(), "session:BLIP", {
      send: (_ws, msg) => sent.push(msg),
      onFlowing: () => {},
      onViewerFailed: (r) => failed.push(r),
      onLost: (r) => lost.push(r),
    });
    const ws = {} as WebSocket;
    const offers = () => sent.filter((m) => m.type === "webrtc.offer").length;
    link.attach(ws);
    await until(() => offers() === 1, "offer");
    proxy.cut();
    // Unreachable for a few probes (one a second), then back.
    await new Promise((r) => setTimeout(r, 3_000));
    assert.equal(offers(), 1);
    proxy.restore();
    await until(() => offers() === 2, "a second offer");
    assert.deepEqual(lost, []);
    assert.deepEqual(failed, []);
    await link.close();
  } finally {
    await proxy.close();
    await j.stop();
  }
});

/**
 * A loopback HTTP proxy in front of Janus that can be cut: while cut, requests in
 * flight (the viewer's long poll) are aborted and new ones answered 502.
 */
function cuttableProxy(target: string) {
  let cut = false;
  const inflight = new Set<AbortController>();
  const base = new URL(target);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      if (cut) return new Response("cut", { status: 502 });
      const ac = new AbortController();
      inflight.add(ac);
      try {
        const u = new URL(req.url);
        const res = await fetch(`${base.origin}${u.pathname}${u.search}`, {
          method: req.method,
          headers: req.headers,
          body: req.body ? await req.arrayBuffer() : undefined,
          signal: ac.signal,
        });
        return new Response(await res.arrayBuffer(), {
          status: res.status,
          headers: res.headers,
        });
      } catch {
        return new Response("cut", { status: 502 });
      } finally {
        inflight.delete(ac);
      }
    },
  );
  const cutNow = () => {
    cut = true;
    for (const ac of inflight) ac.abort();
  };
  return {
    url: `http://127.0.0.1:${server.addr.port}${base.pathname}`,
    cut: cutNow,
    restore() {
      cut = false;
    },
    // A long poll held by Janus would keep the server up to 30 s.
    close: () => (cutNow(), server.shutdown()),
  };
}

Deno.test("SfuLink: a mountpoint gone from a Janus that still answers (restarted, or destroyed under the session): onLost at once", async () => {
  const j = await startTestJanus();
  const sfu = createJanusSfu({
    url: j.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
  });
  try {
    const mp = await sfu.createMountpoint("session:GONE");
    const sent: ServerMessage[] = [];
    const failed: string[] = [];
    const lost: string[] = [];
    const link = new SfuLink(sfu, mp, memoryLogger(), "session:GONE", {
      send: (_ws, msg) => sent.push(msg),
      onFlowing: () => {},
      onViewerFailed: (r) => failed.push(r),
      onLost: (r) => lost.push(r),
    });
    link.attach({} as WebSocket);
    await until(() => sent.some((m) => m.type === "webrtc.offer"), "offer");
    await sfu.destroyMountpoint(mp.id);
    await until(() => lost.length > 0, "onLost");
    assert.deepEqual(lost, [
      "the SFU no longer holds the session's mountpoint",
    ]);
    assert.deepEqual(failed, []);
    await link.close();
  } finally {
    await j.stop();
  }
});
