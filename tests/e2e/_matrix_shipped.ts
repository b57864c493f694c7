/**
 * The browser matrix's runs of the example page as it ships (./_matrix.ts): a
 * transparent avatar, WebCodecs where the client uses it, else MSE; its picture drawn
 * on a canvas, its sound heard on the browser's sink, the answer's caption shown, and
 * in WebCodecs a takeover; and the probes and steps the WebKitGTK runs
 * (./_matrix_wasm.ts) share.
 */
import assert from "node:assert/strict";
import { replyFor } from "../../scripts/example_engine.ts";
import type { Pulse } from "./_desktop.ts";
import type { PageDriver } from "./_drivers.ts";
import { ENDED, hearAnswer, openPage, until } from "./_matrix_page.ts";

export interface ShippedCtx {
  pulse: Pulse;
  mic: { frames: number };
}

/** What a shipped session measured. */
export interface Shipped {
  /** The client's `client.stats`: the first socket's open → first frame shown (ms). */
  firstFrameMs: number | null;
  /** Its glass-to-glass estimate in the last report before the end (ms). */
  glassMs: number | null;
}

/** Keeps the page's `client.stats` reports (what the player measured). */
const REPORTS = `(() => {
  globalThis.__reports = [];
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (d) {
    if (typeof d === "string" && d.includes('"client.stats"')) __reports.push(JSON.parse(d));
    return send.call(this, d);
  };
  return true;
})()`;

export const WEBCODECS_OPUS =
  `(() => { const s = globalThis.avatarPlayer?.stats;
  return s?.decoder === "webcodecs" && s.webcodecs.framesDrawn > 25 &&
    s.webcodecs.audioCodec === "opus" && s.webcodecs.clockMs > 1000; })()`;

export const MSE_TRANSPARENT =
  `(() => { const v = document.querySelector("video");
  return globalThis.avatarPlayer?.stats.decoder === "mse" && v.hidden &&
    !v.paused && v.currentTime > 1 &&
    document.querySelector("canvas.avatar-canvas")?.width > 0; })()`;

/** Starts the page at `url`, waits until `decoder` draws the transparent avatar. */
export async function start(
  page: PageDriver,
  url: string,
  decoder: "webcodecs" | "mse",
): Promise<void> {
  await openPage(page, url);
  await page.eval(REPORTS);
  await page.eval(`(document.getElementById("start").click(), true)`);
  await until(
    page,
    decoder === "webcodecs" ? WEBCODECS_OPUS : MSE_TRANSPARENT,
    `${decoder} drawing the transparent avatar`,
  );
}

/** Hears a typed turn's answer and sees its caption. */
export async function hearCaption(
  page: PageDriver,
  ctx: ShippedCtx,
): Promise<void> {
  await hearAnswer(
    page,
    ctx.pulse,
    `document.getElementById("caption").textContent.includes(${
      JSON.stringify(replyFor("hello avatar"))
    })`,
    ctx.mic,
  );
}

/** Ends the session; the page saw no error. Returns what the player reported. */
export async function end(page: PageDriver): Promise<Shipped> {
  const reports = await page.eval<Record<string, number>[]>(
    `globalThis.__reports ?? []`,
  );
  await page.eval(`(document.getElementById("end").click(), true)`);
  assert.equal(await until(page, ENDED, "the end"), "ended requested");
  assert.deepEqual(await page.eval(`globalThis.__problems`), []);
  const number = (key: string, r?: Record<string, number>) =>
    typeof r?.[key] === "number" ? r[key] : null;
  return {
    firstFrameMs: number(
      "first_frame_ms",
      reports.find((r) => "first_frame_ms" in r),
    ),
    glassMs: number(
      "glass_to_glass_ms_est",
      reports.findLast((r) => "glass_to_glass_ms_est" in r),
    ),
  };
}

/**
 * The example page as it ships at `pageBase + query`, played by `decoder`: drawn, heard,
 * captioned; in WebCodecs also a takeover, whose new socket's stream is asked for Opus
 * again, drawn and heard (the audio clock, which only runs while the output plays,
 * moves on).
 */
export async function shippedSession(
  page: PageDriver,
  pageBase: string,
  ctx: ShippedCtx,
  decoder: "webcodecs" | "mse",
  query = "",
): Promise<Shipped> {
  await start(page, pageBase + query, decoder);
  await hearCaption(page, ctx);
  if (decoder === "webcodecs") {
    const before = await page.eval<{ streams: number; clockMs: number }>(
      `(({ streams, clockMs }) => ({ streams, clockMs }))(avatarPlayer.stats.webcodecs)`,
    );
    await page.eval(`(avatarPlayer._ws.close(), true)`);
    await until(
      page,
      `(() => { const s = avatarPlayer.stats.webcodecs;
        return s.streams > ${before.streams} &&
          s.audioCodec === "opus" && s.clockMs > ${
        before.clockMs + 1000
      }; })()`,
      "the taken-over stream drawn and heard",
    );
  }
  return await end(page);
}
