/**
 * The browser matrix's steps where WebCodecs' sound is the WebAssembly Opus decoder's
 * (WebKitGTK, ./_matrix.ts), on the example page as it ships: a page whose CSP forbids
 * WebAssembly (MSE), one that allows exactly `'wasm-unsafe-eval'` (WebCodecs), the
 * decoder's chunk held back (the picture plays first; under that CSP the session then
 * turns to MSE), and a stream that turns AAC after Opus was asked (MSE).
 */
import assert from "node:assert/strict";
import type { PageDriver } from "./_drivers.ts";
import { openPage, until } from "./_matrix_page.ts";
import {
  end,
  hearCaption,
  MSE_TRANSPARENT,
  type Shipped,
  type ShippedCtx,
  shippedSession,
  start,
  WEBCODECS_OPUS,
} from "./_matrix_shipped.ts";

/**
 * The CSPs of the WebKit steps: scripts from the page's origin and the worklets'
 * `blob:` URLs, without and with WebAssembly.
 */
export const CSP_NO_WASM = "script-src 'self' blob:";
export const CSP_WASM = "script-src 'self' blob: 'wasm-unsafe-eval'";

/** What the page's server does for these steps: the CSP it sends, the chunk it holds. */
export interface PageServer {
  csp: string | null;
  readonly chunk: ChunkGate;
}

/** Holds the WebAssembly decoder's chunk on the page's server until released. */
export interface ChunkGate {
  hold(): void;
  release(): void;
  /** The page asked for the chunk since `hold`. */
  readonly requested: boolean;
}

/**
 * WebKitGTK with the decoder's chunk held back: the picture plays with WebCodecs before
 * the WebAssembly decoder has loaded (the first frame never waits for it), without
 * sound. Released, the socket is asked for Opus and its sound is heard; or, under a
 * CSP that forbids WebAssembly (`csp`), the decoder cannot run and the session goes on
 * over MSE from the stream it was playing, with sound.
 */
export async function decoderLate(
  page: PageDriver,
  pageBase: string,
  ctx: ShippedCtx,
  gate: ChunkGate,
  csp: boolean,
): Promise<void> {
  gate.hold();
  try {
    await openPage(page, pageBase);
    await page.eval(`(document.getElementById("start").click(), true)`);
    await until(
      page,
      `(() => { const s = globalThis.avatarPlayer?.stats;
        return s?.decoder === "webcodecs" && s.webcodecs.framesDrawn > 25; })()`,
      "webcodecs drawing before the decoder loaded",
    );
    assert.ok(gate.requested, "the page asked for the decoder's chunk");
    assert.equal(
      await page.eval(`avatarPlayer.stats.webcodecs.audioCodec`),
      null,
      "no sound while the decoder loads",
    );
  } finally {
    gate.release();
  }
  await until(page, csp ? MSE_TRANSPARENT : WEBCODECS_OPUS, "the sound");
  await hearCaption(page, ctx);
  await end(page);
}

/** A gate for the decoder's chunk: `wait` holds its request while held. */
export function heldChunk(): ChunkGate & { wait(): Promise<void> } {
  let open = Promise.resolve();
  let release = () => {};
  let requested = false;
  return {
    hold() {
      requested = false;
      open = new Promise((r) => release = r);
    },
    release: () => release(),
    get requested() {
      return requested;
    },
    wait() {
      requested = true;
      return open;
    },
  };
}

/**
 * Where AAC cannot be decoded (WebKitGTK): the page plays WebCodecs with Opus, then asks
 * the socket for AAC itself, as a service that answers AAC after Opus was asked would
 * send. The player goes on over MSE, with sound and captions.
 */
export async function aacAfterOpus(
  page: PageDriver,
  pageBase: string,
  ctx: ShippedCtx,
): Promise<void> {
  await start(page, pageBase, "webcodecs");
  await page.eval(
    `(avatarPlayer._ws.send(JSON.stringify({ type: "media.config", audio: "aac" })), true)`,
  );
  await until(page, MSE_TRANSPARENT, "the AAC stream over MSE");
  await hearCaption(page, ctx);
  await end(page);
}

/** Runs the steps in `page`; `said` logs what a WebCodecs session measured. */
export async function wasmOpusSteps(
  t: Deno.TestContext,
  page: PageDriver,
  pageBase: string,
  ctx: ShippedCtx,
  server: PageServer,
  said: (what: string, r: Shipped) => void,
): Promise<void> {
  const underCsp = async (csp: string, fn: () => Promise<void>) => {
    server.csp = csp;
    try {
      await fn();
    } finally {
      server.csp = null;
    }
  };
  await t.step(
    "a page whose CSP forbids WebAssembly: mse, sound, captions",
    () =>
      underCsp(CSP_NO_WASM, async () => {
        await shippedSession(page, pageBase, ctx, "mse");
      }),
  );
  await t.step(
    "a page whose CSP allows 'wasm-unsafe-eval': webcodecs with Opus, sound, captions, a takeover",
    () =>
      underCsp(CSP_WASM, async () => {
        said(
          "under a CSP",
          await shippedSession(page, pageBase, ctx, "webcodecs"),
        );
      }),
  );
  await t.step(
    "the decoder's chunk held back: webcodecs draws at once, the Opus is heard once it loads",
    () => decoderLate(page, pageBase, ctx, server.chunk, false),
  );
  await t.step(
    "held back under a CSP that forbids WebAssembly: webcodecs draws, then mse, sound, captions",
    () =>
      underCsp(
        CSP_NO_WASM,
        () => decoderLate(page, pageBase, ctx, server.chunk, true),
      ),
  );
  await t.step(
    "a stream that turns AAC after Opus was asked: the session goes on over mse, sound, captions",
    () => aacAfterOpus(page, pageBase, ctx),
  );
}
