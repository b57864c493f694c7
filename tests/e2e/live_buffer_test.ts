/**
 * `LiveBuffer` (client/mse.ts) in real headless Chromium, fed real encoder output
 * (lib/render/encoder.ts): a takeover's stream starts with the current GOP in one burst
 * (up to a second behind live, timestamps from 0); playback jumps to the live edge as
 * soon as that burst is in, instead of playing the whole GOP a second late until it
 * lags past `maxLatencyS`.
 */
import assert from "node:assert/strict";
import { encodeSample } from "../lib/render/_helpers.ts";
import { parseInit } from "../../lib/render/mp4_parse.ts";
import { bundleBrowserClient, bundleFile } from "../../examples/backend.ts";
import {
  openBrowser,
  requireChromium,
  serveLoopback,
  WAIT,
} from "./_browser.ts";

const W = 192;
const H = 192;
const FRAMES = 75;

function b64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

interface Run {
  jumps: number;
  /** Buffered end minus the playhead right after the jump (where it landed). */
  landed: number | null;
  time: number;
}

type Page = Awaited<ReturnType<typeof openBrowser>>["page"];

/**
 * Plays `segments` through a fresh `LiveBuffer` in the page: the first `burst` at once,
 * the rest one per 40 ms; resolves once the video has played 0.4 s past its start.
 */
function play(
  page: Page,
  media: { mime: string; init: string; segments: string[] },
  burst: number,
): Promise<Run> {
  return page.evaluate(async ({ media, burst }) => {
    const { LiveBuffer } = (globalThis as unknown as {
      avatarClient: typeof import("../../client/browser.ts");
    }).avatarClient;
    const bytes = (b64: string) =>
      Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)).buffer;
    const video = document.createElement("video");
    video.muted = true;
    document.body.append(video);
    const buffer = new LiveBuffer(video, {
      onAppended: () => {
        if (video.paused) video.play().catch(() => {});
      },
    });
    buffer.reset(media.mime);
    buffer.append(bytes(media.init));
    const segs = media.segments.map(bytes);
    for (const s of segs.slice(0, burst)) buffer.append(s);
    const feed = setInterval(() => {
      const next = segs[burst++];
      if (next) buffer.append(next);
      else clearInterval(feed);
    }, 40);
    // Where the jump lands: read right after the tick that made it, so a page the
    // machine's load slows afterwards does not change what is measured.
    let landed: number | null = null;
    const tick = setInterval(() => {
      const before = buffer.stats.liveEdgeJumps;
      buffer.tick();
      if (landed === null && buffer.stats.liveEdgeJumps > before) {
        const r = video.buffered;
        landed = r.end(r.length - 1) - video.currentTime;
      }
    }, 250);
    const start = await new Promise<number>((ok) =>
      video.addEventListener("playing", () => ok(video.currentTime), {
        once: true,
      })
    );
    await new Promise((ok) => setTimeout(ok, 600));
    clearInterval(feed);
    clearInterval(tick);
    const out = {
      jumps: buffer.stats.liveEdgeJumps,
      landed,
      time: video.currentTime - start,
    };
    buffer.close();
    video.remove();
    return out;
  }, { media, burst });
}

Deno.test("LiveBuffer: a takeover's GOP burst jumps to the live edge", async (t) => {
  await requireChromium();
  const { init, segments } = await encodeSample(W, H, FRAMES);
  const bundle = await bundleBrowserClient();
  const { server, base } = serveLoopback((req) =>
    bundleFile(bundle, new URL(req.url).pathname, "/client.js") ??
      new Response(
        `<!doctype html><script type="module">import * as c from "/client.js"; globalThis.avatarClient = c;</script>`,
        { headers: { "content-type": "text/html" } },
      )
  );
  const browser = await openBrowser({
    prefix: "live-buffer-e2e-",
    permissions: [],
    origin: base,
    media: true,
  });
  const media = {
    mime: parseInit(init).mime,
    init: b64(init),
    segments: segments.map(b64),
  };
  try {
    await browser.page.goto(base);
    await browser.page.waitForFunction(
      () => "avatarClient" in globalThis,
      undefined,
      WAIT,
    );
    await t.step(
      "a burst of 15 frames (0.6 s) plays from the live edge",
      async () => {
        const run = await play(browser.page, media, 15);
        assert.equal(run.jumps, 1, "one jump to the live edge");
        // It lands at the target latency (0.25 s before the newest media), and plays.
        assert.ok(
          run.landed !== null && Math.abs(run.landed - 0.25) < 0.05,
          `landed ${run.landed?.toFixed(3)} s behind`,
        );
        assert.ok(run.time > 0, `played ${run.time.toFixed(3)} s`);
      },
    );
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
    await server.shutdown();
  }
});
