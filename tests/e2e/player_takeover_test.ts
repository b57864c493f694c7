/**
 * A taken-over player stops, in real headless Chromium: a fake media service (a real
 * WebSocket server on loopback) closes the player's socket with 4000 — the close code of
 * a takeover (DECISIONS 6) — with or without the `session_already_active` message before
 * it (a socket too slow to read gets only the close). Either way the page is told
 * `session_already_active` once, the player closes, and it never redials: a redial
 * would take the session back from the newer socket, and the two would fight. On a
 * failure the message has both sides' account (the service's dials, the page's states).
 */
import assert from "node:assert/strict";
import { bundleBrowserClient, bundleFile } from "../../examples/backend.ts";
import {
  openBrowser,
  requireChromium,
  serveLoopback,
  WAIT,
} from "./_browser.ts";

const PAGE = `<!doctype html><meta charset="utf-8"><title>takeover</title>
<video id="v" playsinline></video>
<script type="module">
import { AvatarPlayer } from "/avatar.js";
globalThis.errors = [];
const p = new AvatarPlayer({
  sessionId: "session:takeover",
  token: "token",
  wsBaseUrl: location.origin.replace("http", "ws"),
  video: document.getElementById("v"),
  microphone: false,
  refreshToken: () => Promise.resolve({ client_token: "token", expires_at: Date.now() + 3600e3 }),
});
globalThis.avatarPlayer = p;
globalThis.trail = [];
const at = () => Math.round(performance.now());
p.on("error", (e) => (globalThis.errors.push(e.code), globalThis.trail.push([at(), "error", e.code])));
p.on("state", (e) => globalThis.trail.push([at(), "state", e.state]));
await p.connect();
</script>`;

type Win = {
  avatarPlayer: { state: string };
  errors: string[];
  trail: unknown[];
};

Deno.test("a player whose socket is closed with 4000 stops without redialling", async (t) => {
  await requireChromium();
  const bundle = await bundleBrowserClient();
  let dials = 0;
  let withMessage = true;
  /** What the fake service saw, for a failure's message. */
  let seen: string[] = [];
  /** How many dials there had been when a socket was closed with 4000 (0: none yet). */
  let takenOverAt = 0;
  const t0 = performance.now();
  const note = (what: string) =>
    seen.push(`${Math.round(performance.now() - t0)} ${what}`);
  const { server, base } = serveLoopback((req) => {
    const path = new URL(req.url).pathname;
    const script = bundleFile(bundle, path);
    if (script) return script;
    if (!path.endsWith("/ws")) {
      return new Response(PAGE, { headers: { "content-type": "text/html" } });
    }
    const dial = ++dials;
    note(`dial ${dial}: upgrade`);
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onclose = (e) => note(`dial ${dial}: closed ${e.code}`);
    socket.onopen = () => {
      note(`dial ${dial}: open`);
      socket.send(JSON.stringify({ type: "session.state", status: "active" }));
      setTimeout(() => {
        if (withMessage) {
          socket.send(JSON.stringify({
            type: "error",
            code: "session_already_active",
            fatal: false,
          }));
        }
        takenOverAt = dials;
        note(`dial ${dial}: closing with 4000`);
        socket.close(4000, "taken over by a newer connection");
      }, 200);
    };
    return response;
  });
  const browser = await openBrowser({
    prefix: "takeover-e2e-",
    permissions: [],
    origin: base,
  });
  const { page } = browser;
  try {
    for (const message of [true, false]) {
      await t.step(
        message ? "with session_already_active" : "the close alone",
        async () => {
          withMessage = message;
          dials = 0;
          takenOverAt = 0;
          seen = [];
          await page.goto(base);
          await page.waitForFunction(
            () =>
              (globalThis as unknown as Win).avatarPlayer?.state === "closed",
            undefined,
            WAIT,
          );
          // Longer than the player's redial delay after a close (250 ms).
          await new Promise((ok) => setTimeout(ok, 1000));
          const errors = await page.evaluate(() =>
            (globalThis as unknown as Win).errors
          );
          // On a failure, both sides' account of what happened.
          const why = async () =>
            JSON.stringify({
              service: seen,
              page: await page.evaluate(() =>
                (globalThis as unknown as Win).trail
              ),
            });
          assert.deepEqual(errors, ["session_already_active"], await why());
          // Taken over, and no dial after it (a first connect that failed before it
          // opened is retried once, by design: that is not a redial after a takeover).
          assert.ok(takenOverAt >= 1, await why());
          assert.equal(dials, takenOverAt, await why());
        },
      );
    }
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
    await server.shutdown();
  }
});
