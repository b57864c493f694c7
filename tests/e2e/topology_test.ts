/**
 * The hosting topology on one machine, as close to Deploy as it allows: a control plane
 * (`SERVICE_ROLE=control`) in its own process with Deno permissions that forbid
 * subprocesses and any write but the KV file's folder, two media nodes
 * (`SERVICE_ROLE=media`) in theirs, all on one shared KV file. Shows that the control
 * plane sees the nodes register (`/readyz`), that a session created through it (by the
 * example backend, whose client and page sockets both point at the control plane) lands
 * on a node and plays in Chromium through the control plane's relay, that killing that
 * node ends its session `ended_with_warnings` / `instance_lost` and the next create lands
 * on the other node and plays, and that the engine's credential never shows in the
 * control plane's logs. A portrait uploaded on the control plane's console plays from a
 * node. Screenshots: test-output/screenshots/topology.png and topology_photo.png.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import type { AvatarPlayer } from "../../client/browser.ts";
import { TEST_ADMIN_KEY } from "../_helpers.ts";
import { type Instance, startInstance } from "../lib/media/_instance.ts";
import { cookieFrom, hiddenField } from "../routes/admin/_console.ts";
import { requireChromium, SHOTS, startTlsEngine, WAIT } from "./_browser.ts";
import {
  type PlayerFront,
  startOnPage,
  startPlayerFront,
  waitPlaying,
} from "./_player.ts";

/** The example page exposes its player as `globalThis.avatarPlayer`. */
type Win = { avatarPlayer: AvatarPlayer };

/** Shared by the control plane and the nodes (≥ 32 bytes). */
const NODE_SECRET = "topology-test-node-secret-0123456789abcdef";
/** A dead node is noticed after 3.5 heartbeats: about a second. */
const HEARTBEAT_MS = "300";
/** How long a killed node's session may take to be ended, and a node to register. */
const DEADLINE_MS = 20_000;

const TERMINAL = ["ended", "ended_with_warnings", "failed"];

/** Polls `read` every 100 ms until `done` holds for its value, up to `DEADLINE_MS`. */
async function until<T>(
  what: string,
  read: () => Promise<T>,
  done: (v: T) => boolean,
): Promise<T> {
  const end = Date.now() + DEADLINE_MS;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > end) {
      throw new Error(`${what}: still ${JSON.stringify(v)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function getJson(url: string): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
  });
  return await res.json();
}

function playback(page: Page): Promise<{ time: number; frames: number }> {
  return page.evaluate(() => {
    const v = document.querySelector("video")!;
    return {
      time: v.currentTime,
      frames: v.getVideoPlaybackQuality().totalVideoFrames,
    };
  });
}

const HOPPER = Deno.readFileSync(
  new URL("../fixtures/photo/grace_hopper.jpg", import.meta.url),
);

/**
 * Signs in to the console of `base` as the operator and uploads the test portrait for
 * tenant `admin` (the example backend's) in `framing`; returns the new photo avatar's id.
 */
async function uploadPhoto(
  control: Instance,
  framing: string,
): Promise<string> {
  const base = control.base;
  const origin = new URL(base).origin;
  const login = await fetch(`${base}/admin/login`);
  const loginHtml = await login.text();
  const signed = await fetch(`${base}/admin/login`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      cookie: cookieFrom(login, "avtr_console_login") ?? "",
      origin,
    },
    body: new URLSearchParams({
      _csrf: hiddenField(loginHtml, "_csrf"),
      next: "/admin/avatars",
      api_key: TEST_ADMIN_KEY,
    }),
    redirect: "manual",
  });
  await signed.body?.cancel();
  const cookie = cookieFrom(signed, "avtr_console");
  assert.ok(cookie, `console sign-in answered ${signed.status}`);
  const page = await fetch(`${base}/admin/avatars?tenant=admin`, {
    headers: { cookie },
  });
  const form = new FormData();
  form.set("_csrf", hiddenField(await page.text(), "_csrf"));
  form.set("tenant_id", "admin");
  form.set("name", "Grace");
  form.set("consent", "yes");
  form.set("framing", framing);
  form.set(
    "photo",
    new File([HOPPER], "grace.jpg", { type: "image/jpeg" }),
  );
  const res = await fetch(`${base}/admin/avatars`, {
    method: "POST",
    headers: { cookie, origin },
    body: form,
    redirect: "manual",
  });
  const html = await res.text();
  // Refused: the control plane's own account of why (its warn and error lines).
  const why = () =>
    control.output().split("\n").filter((l) => /"level":"(warn|error)"/.test(l))
      .slice(-10).join("\n");
  assert.equal(
    res.status,
    201,
    res.status === 201 ? "" : `${why()}\n${html.slice(0, 400)}`,
  );
  const id = html.match(/data-avatar-id="(ph_[0-9A-Z]{26})"/)?.[1];
  assert.ok(id, "the uploaded avatar is listed");
  return id;
}

Deno.test("topology: a sandboxed control plane, two media nodes, one KV file", async (t) => {
  await requireChromium();
  const dir = await Deno.makeTempDir({ prefix: "topology-" });
  const kvPath = `${dir}/kv.sqlite`;
  const engineToken = `topology-engine-${crypto.randomUUID()}`;
  const roleEnv = (role: string) => ({
    SERVICE_ROLE: role,
    NODE_SECRET,
    NODE_HEARTBEAT_MS: HEARTBEAT_MS,
  });
  const engine = await startTlsEngine({ token: engineToken });
  const procs: Instance[] = [];
  let front: PlayerFront | undefined;
  let kv: Deno.Kv | undefined;
  try {
    // Deploy's limits: no subprocess, no system info, writes only beside the KV file.
    const control = await startInstance(kvPath, roleEnv("control"), {
      permissions: [
        "--no-prompt",
        "--allow-net",
        "--allow-env",
        "--allow-read",
        `--allow-write=${dir}`,
      ],
      keepOutput: true,
    });
    procs.push(control);
    const ready = () => getJson(`${control.base}/readyz`);
    let a: Instance;
    let b: Instance;

    await t.step(
      "the control plane sees the media nodes register",
      async () => {
        const before = await ready();
        assert.equal(before.status, "ready");
        assert.deepEqual(before.checks, {
          kv: "ok",
          token_secret: "ok",
          media_nodes: "failing",
        });
        const node = async () => {
          const n = await startInstance(kvPath, roleEnv("media"));
          procs.push(n);
          return n;
        };
        [a, b] = await Promise.all([node(), node()]);
        await until(
          "media_nodes",
          ready,
          (r) => (r.checks as Record<string, string>).media_nodes === "ok",
        );
      },
    );

    kv = await Deno.openKv(kvPath);
    const nodes = () => [a, b];
    /** The node (a or b) holding `id`, by its instance record's URL. */
    const holder = async (id: string): Promise<Instance> => {
      const owner = (await kv!.get<{ owner: string }>(["sessions", id])).value
        ?.owner;
      assert.ok(owner, `${id} has an owner`);
      const url = (await kv!.get<{ url: string }>(["instances", owner])).value
        ?.url;
      assert.ok(url, `the owner ${owner} registered a URL`);
      const node = nodes().find((n) =>
        new URL(n.base).port === new URL(url).port
      );
      assert.ok(node, `${url} is one of the media nodes`);
      return node;
    };
    const session = (id: string) =>
      getJson(`${control.base}/v1/sessions/${encodeURIComponent(id)}`);

    front = await startPlayerFront(
      control.base,
      { url: engine.url, token: engineToken },
      { prefix: "topology-e2e-", viewport: { width: 900, height: 900 } },
    );
    const { page, pageBase } = front;
    const controlWs = control.base.replace(/^http/, "ws");
    /** Ends the page's session `id` with its End button, through the control plane. */
    const endOnPage = async (id: string) => {
      await page.getByRole("button", { name: "End", exact: true }).click();
      await page.waitForFunction(
        () => (globalThis as unknown as Win).avatarPlayer.state === "ended",
        undefined,
        WAIT,
      );
      assert.equal((await session(id)).status, "ended");
    };
    let first = "";
    let lost: Instance;

    await t.step(
      "a session created through the control plane plays in Chromium",
      async () => {
        const { id, socketUrl } = await startOnPage(page, pageBase);
        first = id;
        // The page's media socket goes to the control plane, which relays it.
        assert.ok(socketUrl.startsWith(`${controlWs}/`), socketUrl);
        await waitPlaying(page, await playback(page), 1.5, 20);
        assert.equal((await session(id)).status, "active");
        lost = await holder(id);
      },
    );

    await t.step(
      "a portrait uploaded on the control plane's console plays from a media node, in its framing",
      async () => {
        // Prepared on the control plane (WASM only: no subprocess there), stored in
        // the shared KV, read and painted by the node that takes the session.
        const avatarId = await uploadPhoto(control, "portrait");
        const { id } = await startOnPage(
          page,
          pageBase,
          `decoder=video&bg=studio&avatar=${avatarId}`,
        );
        await waitPlaying(page, await playback(page), 1.5, 20);
        const s = await session(id);
        assert.equal(s.status, "active");
        const size = await page.evaluate(() => {
          const v = document.querySelector("video")!;
          return [v.videoWidth, v.videoHeight];
        });
        assert.deepEqual(size, [720, 1280]);
        await page.screenshot({
          path: new URL("topology_photo.png", SHOTS).pathname,
        });
        // Ended: a portrait holds four of its node's render slots, all it has.
        await endOnPage(id);
      },
    );

    await t.step(
      "killing its node ends the session as instance_lost",
      async () => {
        await lost.stop("SIGKILL");
        const ended = await until(
          "the killed node's session",
          () => session(first),
          (s) => TERMINAL.includes(String(s.status)),
        );
        assert.equal(ended.status, "ended_with_warnings");
        assert.equal(ended.end_reason, "instance_lost");
      },
    );

    await t.step(
      "the next create lands on the other node and plays through the relay",
      async () => {
        const { id, socketUrl } = await startOnPage(page, pageBase);
        assert.notEqual(id, first);
        assert.ok(socketUrl.startsWith(`${controlWs}/`), socketUrl);
        const survivor = await holder(id);
        assert.notEqual(survivor, lost);
        await waitPlaying(page, await playback(page), 1.5, 20);
        assert.equal((await session(id)).status, "active");
        await page.screenshot({
          path: new URL("topology.png", SHOTS).pathname,
        });
        // Ended through the control plane too.
        await endOnPage(id);
        assert.deepEqual(front!.browser.problems, []);
      },
    );

    await t.step(
      "the engine's credential never reaches the control plane's logs",
      async () => {
        await front!.close();
        front = undefined;
        // Stopped for its logs: the logger's buffer is flushed on exit.
        await control.stop();
        const logs = control.output();
        // The creates were logged: these are its request logs.
        assert.match(
          logs,
          /"method":"POST","route":"\/v1\/sessions",.*"status":200/,
        );
        assert.ok(!logs.includes(engineToken), "engine token in the logs");
      },
    );
  } finally {
    await front?.close();
    for (const p of procs) await p.stop();
    await engine.close();
    kv?.close();
    await Deno.remove(dir, { recursive: true });
  }
});
