/**
 * The browser client's token and socket faults in a real headless Chromium, against the
 * real service and the example backend (the page's own sessions): a refused token is
 * refreshed and retried once, an expired one is refreshed before the first dial, a
 * refresh that yields another refused token stops there, and a socket that died while
 * the tab slept is taken over on wake. The playing path: player_test.ts.
 */
import assert from "node:assert/strict";
import { startPlayerStack } from "./_player.ts";

Deno.test("browser client: token faults and a dead socket: refresh first, one retry, takeover on wake", async () => {
  const stack = await startPlayerStack({
    prefix: "player-tokens-e2e-",
    viewport: { width: 900, height: 900 },
  });
  const { page, pageBase } = stack;
  try {
    await page.goto(pageBase);
    const r = await page.evaluate(async () => {
      // Count socket attempts: the page cannot see a refused upgrade's status.
      let dials = 0;
      const Native = WebSocket;
      globalThis.WebSocket = class extends Native {
        constructor(url: string | URL, protocols?: string | string[]) {
          super(url, protocols);
          dials++;
        }
      };
      // Up to 20 s: on a machine busy with the whole suite a redial can take seconds.
      const until = async (check: () => boolean) => {
        for (let i = 0; i < 400 && !check(); i++) {
          await new Promise((ok) => setTimeout(ok, 50));
        }
        return check();
      };
      const { AvatarPlayer } = await import("/avatar.js");
      const post = async (path: string) =>
        (await fetch(path, { method: "POST" })).json();
      const s = await post("/api/avatar/sessions");
      const sessionPath = `/api/avatar/sessions/${
        encodeURIComponent(s.session_id)
      }`;
      const fresh = () => post(`${sessionPath}/token`);
      let clock = Date.now();
      const attempt = async (
        token: string,
        expiresAt: number | undefined,
        refresh: () => Promise<unknown>,
      ) => {
        const r = {
          refreshes: 0,
          dials: 0,
          ok: false,
          errors: [] as string[],
        };
        dials = 0;
        const player = new AvatarPlayer({
          sessionId: s.session_id,
          token,
          expiresAt,
          wsBaseUrl: s.ws_base_url,
          video: document.createElement("video"),
          microphone: false,
          now: () => clock,
          refreshToken: () => (r.refreshes++, refresh()),
        });
        player.on("error", (e: { code: string }) => r.errors.push(e.code));
        r.ok = await player.connect().then(() => true, () => false);
        r.dials = dials;
        return { player, r };
      };
      const view = (x: Awaited<ReturnType<typeof attempt>>) => ({
        ...x.r,
        errors: [...x.r.errors],
        state: x.player.state,
        reconnects: x.player.stats.reconnects,
      });
      // 1. A refused token (a close before open): one refresh, one retry, connected.
      const a = await attempt("bogus", undefined, fresh);
      // 2. An expired token is refreshed before the first dial; it takes over.
      const b = await attempt(s.client_token, clock - 1, fresh);
      await until(() => a.player.state === "closed");
      // 3. A refresh that yields another refused token: no second retry.
      const c = await attempt("bogus", undefined, () =>
        Promise.resolve({
          client_token: "still-bogus",
          expires_at: clock + 60_000,
        }));
      const before = { a: view(a), b: view(b), c: view(c) };
      // 4. Back from sleep with a socket that no longer answers: the wake-up
      //    ping gets no pong, so the player takes the session over again.
      const d = await attempt("bogus", undefined, fresh);
      // d took the session over from b: b must know before the wake-up below, which
      // every player of the page hears (else b, still open, takes it back).
      await until(() => b.player.state === "closed");
      const ws = d.player._ws!;
      const deliver = ws.onmessage!;
      ws.onmessage = function (e: MessageEvent) {
        if (typeof e.data === "string" && e.data.includes('"pong"')) return;
        deliver.call(this, e);
      };
      document.dispatchEvent(new Event("visibilitychange"));
      clock += 11_000;
      const revived = await until(() =>
        d.player.state === "open" && d.player.stats.reconnects === 1
      );
      const after = {
        d: view(d),
        revived,
        dWhy: JSON.stringify({
          d: view(d),
          b: view(b),
          c: view(c),
          a: view(a),
        }),
      };
      d.player.close();
      globalThis.WebSocket = Native;
      await post(`${sessionPath}/end`);
      return { ...before, ...after };
    });
    const ok = { ok: true, refreshes: 1, reconnects: 0 };
    // a: refused, refreshed once, retried once; later taken over by b and did not
    // fight back (no reconnect).
    assert.deepEqual(r.a, {
      ...ok,
      dials: 2,
      state: "closed",
      errors: ["session_already_active"],
    });
    assert.deepEqual(r.b, { ...ok, dials: 1, state: "open", errors: [] });
    assert.deepEqual(r.c, {
      ...ok,
      ok: false,
      dials: 2,
      state: "closed",
      errors: ["connect_failed"],
    });
    assert.equal(r.revived, true, `not revived: ${r.dWhy}`);
    // d: 1 refresh to connect + 1 for the takeover after the missed pong.
    assert.deepEqual(r.d, {
      ok: true,
      refreshes: 2,
      dials: 2,
      state: "open",
      reconnects: 1,
      errors: [],
    });
    assert.deepEqual(stack.browser.problems, []);
  } finally {
    await stack.close();
  }
});
