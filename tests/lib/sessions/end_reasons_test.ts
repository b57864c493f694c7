/**
 * Every end reason of DECISIONS 4 produced by its real path (REST end, the reaper driven
 * by the injected clock, a fake engine that refuses, fails or ends the conversation,
 * encoders killed, a service process killed), each checked in the status read, the webhook body and the console;
 * and the tenant's usage totals equal the sum of the sessions' durations.
 */
import assert from "node:assert/strict";
import { instanceStaleMs } from "../../../lib/media/presence.ts";
import { DEFAULT_HEARTBEAT_MS } from "../../../lib/config_nodes.ts";
import { reapOnce } from "../../../lib/media/reaper.ts";
import { startEcepFake } from "../../fakes/ecep_engine_fake.ts";
import { TEST_ADMIN_KEY, testApp, TestClock } from "../../_helpers.ts";
import { startInstance } from "../media/_instance.ts";
import { get, signIn } from "../../routes/admin/_console.ts";
import { startReceiver, waitUntil } from "../webhooks/_helpers.ts";
import {
  Browser,
  connectActive,
  createSession,
  ENGINE_KEY,
  ffmpegChildren,
  type LiveStack,
  liveStack,
  statusOf,
} from "../media/_live.ts";
import { expectEnded, expectSocketEnd } from "./_ended.ts";

const end = (s: LiveStack, id: string, force = false) =>
  s.t.request(`/v1/sessions/${id}/end${force ? "?force=true" : ""}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
  });

/** The `data-value` of the tenant page's usage cell `field` in row `window`. */
function usageCell(html: string, window: string, field: string): string {
  const row = html.match(
    new RegExp(`<tr data-usage="${window}">([\\s\\S]*?)</tr>`),
  );
  assert.ok(row, `no usage row ${window}`);
  const cell = row[1].match(
    new RegExp(`data-field="${field}"(?: data-value="([^"]*)")?>([^<]*)<`),
  );
  assert.ok(cell, `no ${field} cell in ${window}`);
  return cell[1] ?? cell[2];
}

Deno.test("end reasons from live paths: requested, forced, provider_ended, provider_failed, render_failed, start_failed; usage adds up", async (t) => {
  const rx = startReceiver();
  const s = await liveStack({ END_CLEANUP_TIMEOUT_MS: "3000" });
  const browsers: Browser[] = [];
  const ids: string[] = [];
  try {
    const c = await signIn(s.t);
    const active = async () => {
      const created = await createSession(s, undefined, {
        webhook_url: rx.url,
      });
      ids.push(created.session_id);
      const b = await connectActive(
        s,
        created.session_id,
        created.client_token,
        2,
      );
      browsers.push(b);
      return { id: created.session_id, b };
    };

    await t.step("requested: the end call", async () => {
      const { id, b } = await active();
      assert.equal((await end(s, id)).status, 200);
      const want = {
        status: "ended",
        reason: "requested",
        fromActive: true,
      } as const;
      await expectEnded(s.t, rx, c, id, want);
      await expectSocketEnd(b, want);
      await b.closed();
    });

    await t.step("forced: the end call with force=true", async () => {
      const { id } = await active();
      assert.equal((await end(s, id, true)).status, 200);
      await expectEnded(s.t, rx, c, id, {
        status: "ended",
        reason: "forced",
        fromActive: true,
      });
    });

    await t.step(
      "provider_ended: the engine closes its socket normally",
      async () => {
        const { id, b } = await active();
        b.send({ type: "text", text: "bye" });
        const want = {
          status: "ended",
          reason: "provider_ended",
          fromActive: true,
        } as const;
        await expectEnded(s.t, rx, c, id, want);
        await expectSocketEnd(b, want);
      },
    );

    await t.step("provider_failed: the engine's fatal error", async () => {
      const { id, b } = await active();
      b.send({ type: "text", text: "fatal" });
      const want = {
        status: "ended_with_warnings",
        reason: "provider_failed",
        fromActive: true,
      } as const;
      await expectEnded(s.t, rx, c, id, want);
      await expectSocketEnd(b, want);
    });

    await t.step(
      "render_failed: the encoder keeps dying until the session gives up",
      async () => {
        await waitUntil(
          async () => (await ffmpegChildren()).length === 0 || undefined,
          "no encoder of an earlier session left",
        );
        const { id } = await active();
        for (let i = 0; i < 100; i++) {
          if ((await statusOf(s, id)).status !== "active") break;
          for (const pid of await ffmpegChildren()) {
            try {
              Deno.kill(pid, "SIGKILL");
            } catch { /* exited meanwhile */ }
          }
          await new Promise((r) => setTimeout(r, 200));
        }
        await expectEnded(s.t, rx, c, id, {
          status: "ended_with_warnings",
          reason: "render_failed",
          fromActive: true,
        });
      },
    );

    await t.step(
      "start_failed: the engine refuses the connection",
      async () => {
        const created = await createSession(s, "wrong-engine-key", {
          webhook_url: rx.url,
        });
        ids.push(created.session_id);
        const b = Browser.connect(s, created.session_id, created.client_token);
        browsers.push(b);
        await b.message(
          (m) => m.type === "error" && m.code === "invalid_session",
          "invalid_session",
        );
        await expectEnded(s.t, rx, c, created.session_id, {
          status: "failed",
          reason: "start_failed",
          fromActive: false,
        });
      },
    );

    await t.step(
      "the tenant page's totals equal the sum of the sessions' durations",
      async () => {
        let activeMs = 0;
        for (const id of ids) {
          const st = await statusOf(s, id);
          if (typeof st.duration_s === "number") {
            activeMs += Math.round(st.duration_s * 1000);
          }
        }
        assert.ok(activeMs > 0);
        const html = await (await get(s.t, c, "/admin/tenants/admin")).text();
        for (const window of ["24h", "30d"]) {
          assert.equal(
            usageCell(html, window, "sessions"),
            String(ids.length),
          );
          assert.equal(
            Number(usageCell(html, window, "active-ms")),
            activeMs,
          );
        }
      },
    );
  } finally {
    for (const b of browsers) b.close();
    await s.close();
    await rx.close();
  }
});

Deno.test("end reasons from the reaper on the injected clock: connect_timeout, idle_timeout, max_duration", async (t) => {
  const rx = startReceiver();
  const clock = new TestClock(Date.now());
  const s = await liveStack({
    SESSION_CONNECT_TIMEOUT_S: "60",
    SESSION_IDLE_TIMEOUT_S: "30",
    SESSION_MAX_DURATION_S: "600",
  }, { clock });
  try {
    const c = await signIn(s.t);
    const create = () => createSession(s, undefined, { webhook_url: rx.url });

    await t.step("connect_timeout: no media socket in time", async () => {
      const { session_id } = await create();
      clock.advance(60_000);
      assert.deepEqual((await reapOnce(s.t.app.deps)).failed, [session_id]);
      await expectEnded(s.t, rx, c, session_id, {
        status: "failed",
        reason: "connect_timeout",
        fromActive: false,
      });
    });

    await t.step("idle_timeout: no media connection for 30 s", async () => {
      const { session_id, client_token } = await create();
      const b = await connectActive(s, session_id, client_token);
      b.close();
      await b.closed();
      await waitUntil(async () => {
        const p = await s.t.app.deps.kv.get<{ attached: boolean }>([
          "media_presence",
          session_id,
        ]);
        return p.value && !p.value.attached ? true : undefined;
      }, "the detach recorded");
      clock.advance(30_000);
      assert.deepEqual((await reapOnce(s.t.app.deps)).ended, [session_id]);
      const st = await expectEnded(s.t, rx, c, session_id, {
        status: "ended_with_warnings",
        reason: "idle_timeout",
        fromActive: true,
      });
      assert.equal(st.duration_s, 30, "seconds active on the clock");
    });

    await t.step("max_duration: 600 s active", async () => {
      const { session_id, client_token } = await create();
      const b = await connectActive(s, session_id, client_token);
      clock.advance(600_000);
      assert.deepEqual((await reapOnce(s.t.app.deps)).ended, [session_id]);
      const want = {
        status: "ended_with_warnings",
        reason: "max_duration",
        fromActive: true,
      } as const;
      const st = await expectEnded(s.t, rx, c, session_id, want);
      assert.equal(st.duration_s, 600);
      await expectSocketEnd(b, want);
    });

    await t.step("usage: 3 sessions, 630 s active", async () => {
      const html = await (await get(s.t, c, "/admin/tenants/admin")).text();
      for (const window of ["24h", "30d"]) {
        assert.equal(usageCell(html, window, "sessions"), "3");
        assert.equal(usageCell(html, window, "active-ms"), "630000");
      }
    });
  } finally {
    await s.close();
    await rx.close();
  }
});

Deno.test("instance_lost: the process holding a live session is killed; another instance's reaper ends it", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/kv.sqlite`;
  const engine = startEcepFake({ key: ENGINE_KEY });
  const rx = startReceiver();
  const a = await startInstance(kvPath);
  let b: Browser | undefined;
  let other: Awaited<ReturnType<typeof testApp>> | undefined;
  try {
    // The stack's create helper, pointed at process A.
    const onA = {
      t: {
        request: (path: string, init?: RequestInit) =>
          fetch(a.base + path, init),
      },
      engine,
    } as unknown as LiveStack;
    const created = await createSession(onA, ENGINE_KEY, {
      webhook_url: rx.url,
    });
    b = await connectActive(a, created.session_id, created.client_token, 2);
    await a.stop("SIGKILL");
    // Another instance on the same store, its clock past the holder's staleness and
    // the idle timeout.
    const clock = new TestClock(
      Date.now() + instanceStaleMs({ heartbeatMs: DEFAULT_HEARTBEAT_MS }) +
        31_000,
    );
    other = await testApp({
      KV_PATH: kvPath,
      ALLOW_PRIVATE_NETWORK_TARGETS: "true",
      SESSION_IDLE_TIMEOUT_S: "30",
      END_CLEANUP_TIMEOUT_MS: "500",
    }, { clock });
    assert.deepEqual(
      (await reapOnce(other.app.deps)).ended,
      [created.session_id],
    );
    const c = await signIn(other);
    await expectEnded(other, rx, c, created.session_id, {
      status: "ended_with_warnings",
      reason: "instance_lost",
      fromActive: true,
    });
  } finally {
    b?.close();
    await a.stop();
    await other?.close();
    await engine.close();
    await rx.close();
    await Deno.remove(dir, { recursive: true });
  }
});
