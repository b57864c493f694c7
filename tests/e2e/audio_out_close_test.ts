/**
 * The WebCodecs player's audio output (client/webcodecs/audio_out.ts) closed while its
 * worklet module loads, in real headless Chromium: a player taken over right after its
 * first frame closes its output before the worklet is up. That is no failure: `ready`
 * resolves, so the page is not told `media_error` for a normal takeover
 * (player_tokens_test.ts saw it now and then, when closing an output closed its
 * context and Chromium aborted the module load). Outputs one after another share the
 * page's one context and never close it: WebKitGTK's page deadlocked when one output
 * closed its context while the next opened its own.
 */
import assert from "node:assert/strict";
import { openBrowser, requireChromium, serveLoopback } from "./_browser.ts";

/** client/webcodecs/audio_out.ts bundled for the browser. */
async function bundleAudioOut(): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--platform",
      "browser",
      new URL("../../client/webcodecs/audio_out.ts", import.meta.url).pathname,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

Deno.test("AudioOut closed while its worklet loads: ready resolves, the page sees no error; outputs share one context, left open", async () => {
  await requireChromium();
  const js = await bundleAudioOut();
  const { server, base } = serveLoopback((req) => {
    const path = new URL(req.url).pathname;
    if (path === "/audio_out.js") {
      return new Response(js, {
        headers: { "content-type": "text/javascript" },
      });
    }
    return new Response("<!doctype html><title>audio out</title>", {
      headers: { "content-type": "text/html" },
    });
  });
  const browser = await openBrowser({
    prefix: "audio-out-close-e2e-",
    permissions: [],
    origin: base,
    media: true,
  });
  try {
    await browser.page.goto(base);
    const outcomes = await browser.page.evaluate(async () => {
      const { AudioOut } = await import("/audio_out.js");
      const out: string[] = [];
      const contexts = new Set<AudioContext>();
      // Closed at once, then after a few ms, while the module loads.
      for (const waitMs of [0, 0, 0, 0, 1, 2, 4, 6, 8, 10]) {
        const audio = new AudioOut(96000);
        contexts.add(audio.ctx);
        if (waitMs > 0) await new Promise((ok) => setTimeout(ok, waitMs));
        audio.close();
        out.push(
          await audio.ready.then(
            () => "resolved",
            (e: Error) => `rejected: ${e.name}`,
          ),
        );
      }
      // An output left open still comes up: closing is what makes the abort benign.
      const open = new AudioOut(96000);
      contexts.add(open.ctx);
      out.push(await open.ready.then(() => "open", (e: Error) => e.name));
      open.close();
      // (Before: eleven contexts, each closed with its output.)
      out.push(`${contexts.size} context, ${open.ctx.state}`);
      return out;
    });
    assert.deepEqual(outcomes, [
      ...Array(10).fill("resolved"),
      "open",
      "1 context, running",
    ]);
    assert.deepEqual(browser.problems, []);
  } finally {
    await browser.close();
    await server.shutdown();
  }
});
