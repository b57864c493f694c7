/**
 * The browser matrix (issue 20, DECISIONS 11): one browser against the real service
 * with a real Janus configured, the example engine on wss, the example backend and page
 * with the bundled browser client. A session created `auto` (which picks `webrtc_sfu`:
 * Janus answers) and one created `websocket_fmp4` each must play moving video with
 * audible sound (recorded from the browser's own PulseAudio null sink), carry the
 * microphone to the engine, and show the end's status and reason on the page. A browser
 * that cannot play WebRTC plays the `auto` session over MSE on the same socket.
 */
import assert from "node:assert/strict";
import { AvatarClient } from "../../client/server.ts";
import { bundleBrowserClient, createBackend } from "../../examples/backend.ts";
import { replyFor } from "../../scripts/example_engine.ts";
import { TEST_ADMIN_KEY, testApp } from "../_helpers.ts";
import { startTestJanus } from "../lib/sfu/_janus.ts";
import { serveLoopback, startTlsEngine } from "./_browser.ts";
import { type Pulse, startPulse } from "./_desktop.ts";
import type { PageDriver } from "./_drivers.ts";
import {
  ENDED,
  FRAME,
  hearAnswer,
  openPage,
  PAGE_QUERY,
  PLAYS,
  until,
  waitFor,
} from "./_matrix_page.ts";
import { type Shipped, shippedSession } from "./_matrix_shipped.ts";
import { heldChunk, type PageServer, wasmOpusSteps } from "./_matrix_wasm.ts";

/** The backends of the page's origin: a transport each, and one the engine refuses. */
type Backend = "auto" | "websocket_fmp4" | "webrtc_sfu" | "refused";

export interface MatrixOptions {
  /** Opens the browser, its sound going to `pulseServer`, allowed the mic on `origin`. */
  open: (pulseServer: string, origin: string) => Promise<PageDriver>;
  /** How the `auto` session plays in this browser: WebRTC, or fMP4 over MSE. */
  autoPlays: "rtc" | "mse";
  /**
   * The browser answers an H.264 offer with the video rejected: also run `auto` with
   * `RTCRtpReceiver.getCapabilities` hidden, so the client finds out from its answer.
   */
  rejectsVideo?: boolean;
  /** Opens the browser once more, refusing autoplay with sound. */
  openMutedOnly?: (pulseServer: string) => Promise<PageDriver>;
  /**
   * The client decodes `websocket_fmp4` with WebCodecs here (`decoder: "auto"`): also
   * run the example page as it ships (WebCodecs, transparent avatar).
   */
  webCodecs?: boolean;
  /**
   * WebCodecs' sound is the WebAssembly Opus decoder's here (WebKitGTK: reading its
   * decoded `AudioData` crashes it, and AAC is not decoded): also run the shipped page
   * under a CSP without `'wasm-unsafe-eval'` (it must play MSE), with exactly that
   * (WebCodecs), and with a stream that turns AAC after Opus was asked (MSE).
   */
  wasmOpus?: boolean;
}

/** One session in the browser, from Start to End. */
async function session(
  page: PageDriver,
  pageBase: string,
  ctx: {
    pulse: Pulse;
    mic: { loud: number; frames: number };
    client: AvatarClient;
  },
  transport: "auto" | "websocket_fmp4",
  plays: "rtc" | "mse",
): Promise<{ firstPlayMs: number; peakRms: number }> {
  await openPage(page, `${pageBase}/?${PAGE_QUERY}`);
  await page.eval(
    `(globalThis.__start = performance.now(), document.getElementById("start").click(), true)`,
  );
  await until(page, `globalThis.avatarPlayer?.state === "open"`, "open");
  const id = await page.eval<string>(
    `decodeURIComponent(new URL(avatarPlayer._ws.url).pathname.split("/")[3])`,
  );
  await until(
    page,
    `(() => { const v = document.querySelector("video");
      return !v.paused && v.videoWidth > 0 && v.currentTime > 1; })()`,
    "the video playing",
  );
  assert.equal(await page.eval(PLAYS), plays);
  const fellBack = transport === "auto" && plays === "mse";
  // A browser that fell back was told why, as a typed notice (not an exception).
  assert.equal(
    await page.eval(
      `document.getElementById("log").textContent.includes("Notice: unsupported_media")`,
    ),
    fellBack,
  );
  const firstPlayMs = await page.eval<number>(
    `Math.round(globalThis.__playing - globalThis.__start)`,
  );

  // Moving video: the picture changes (the idle avatar blinks, looks around).
  // WebKitGTK under load can draw a black frame to the canvas at first: wait for a
  // lit picture (a black stream never gets one).
  const first = await until<{ h: number; lit: number }>(
    page,
    `(() => { const f = ${FRAME}; return f.lit > 10 && f; })()`,
    "a lit picture",
  );
  await until(page, `${FRAME}.h !== ${first.h}`, "the picture to move");

  // The microphone reaches the engine.
  const loud = ctx.mic.loud;
  await waitFor(() => ctx.mic.loud >= loud + 10, "loud microphone frames");

  // Audible sound: a typed turn's answer, heard on the browser's sink.
  const peakRms = await hearAnswer(
    page,
    ctx.pulse,
    `[...document.querySelectorAll('#log li[data-role="avatar"]')]
      .some((li) => li.textContent.includes(${
      JSON.stringify(replyFor("hello avatar"))
    }))`,
    ctx.mic,
  );

  // The end's status and reason reach the page.
  await page.eval(`(document.getElementById("end").click(), true)`);
  const shown = await until<string>(page, ENDED, "the end on the page");
  assert.equal(shown, "ended requested");
  const s = await ctx.client.getSession(id);
  assert.equal(s.status, "ended");
  // REST reports the transport chosen at create, whatever the socket played.
  assert.equal(s.transport, transport === "auto" ? "webrtc_sfu" : transport);
  assert.deepEqual(await page.eval(`globalThis.__problems`), []);
  return { firstPlayMs, peakRms };
}

/**
 * An `auto` session where the client cannot read the receiver's capabilities: its
 * answer rejects the video, so it sends `webrtc.unsupported` instead, never the answer.
 */
async function answerRejected(page: PageDriver, pageBase: string) {
  await openPage(page, `${pageBase}/?${PAGE_QUERY}`);
  await page.eval(`(() => {
    RTCRtpReceiver.getCapabilities = undefined;
    globalThis.__sent = [];
    const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function (d) {
      if (typeof d === "string") __sent.push(JSON.parse(d).type);
      return send.call(this, d);
    };
    document.getElementById("start").click();
    return true;
  })()`);
  await until(
    page,
    `(() => { const v = document.querySelector("video");
      return !v.paused && v.videoWidth > 0 && v.currentTime > 1; })()`,
    "the video playing",
  );
  assert.equal(await page.eval(PLAYS), "mse");
  const sent = await page.eval<string[]>(`globalThis.__sent`);
  assert.ok(sent.includes("webrtc.unsupported"), sent.join());
  assert.ok(!sent.includes("webrtc.answer"), sent.join());
  await page.eval(`(document.getElementById("end").click(), true)`);
  assert.equal(await until(page, ENDED, "the end"), "ended requested");
  assert.deepEqual(await page.eval(`globalThis.__problems`), []);
}

/** A session in a browser that refuses sound without a gesture: it plays muted. */
async function mutedStart(page: PageDriver, pageBase: string): Promise<void> {
  await openPage(page, `${pageBase}/?${PAGE_QUERY}`);
  await page.eval(`(document.getElementById("start").click(), true)`);
  await until(
    page,
    `(() => { const v = document.querySelector("video");
      return !v.paused && v.muted && v.currentTime > 1; })()`,
    "the video playing muted",
  );
  assert.ok(
    await page.eval(
      `document.getElementById("log").textContent.includes("Notice: autoplay_blocked")`,
    ),
  );
  // A takeover's new stream starts again, muted, with no gesture.
  const before = await page.eval<number>(`avatarPlayer.stats.streams`);
  await page.eval(`(avatarPlayer._ws.close(), true)`);
  await until(
    page,
    `(() => { const v = document.querySelector("video");
      return avatarPlayer.stats.streams > ${before} && !v.paused && v.muted &&
        v.currentTime > 0.5; })()`,
    "the new stream playing muted",
  );
  await page.eval(`(document.getElementById("end").click(), true)`);
  assert.equal(await until(page, ENDED, "the end"), "ended requested");
  assert.deepEqual(await page.eval(`globalThis.__problems`), []);
}

/** Runs the matrix in one browser: `auto`, then `websocket_fmp4`. */
export async function runMatrix(
  t: Deno.TestContext,
  name: string,
  options: MatrixOptions,
): Promise<void> {
  const janus = await startTestJanus();
  const engineToken = "matrix-engine-token";
  const engine = await startTlsEngine({ token: engineToken, log: () => {} });
  const service = await testApp({
    ALLOW_PRIVATE_NETWORK_TARGETS: "true",
    ...janus.env,
  });
  const { server: api, base: serviceBase } = serveLoopback((req, info) =>
    service.app.handler(req, info)
  );
  const client = new AvatarClient({
    baseUrl: serviceBase,
    apiKey: TEST_ADMIN_KEY,
  });
  const bundle = await bundleBrowserClient();
  const backendFor = (
    transport: "auto" | "websocket_fmp4" | "webrtc_sfu",
    token: string,
  ) =>
    createBackend({
      client,
      wsBaseUrl: serviceBase.replace(/^http/, "ws"),
      engine: {
        url: engine.url,
        authHeaders: { authorization: `Bearer ${token}` },
      },
      browserBundle: bundle,
      transport,
    });
  const backends: Record<Backend, (req: Request) => Promise<Response>> = {
    auto: backendFor("auto", engineToken),
    websocket_fmp4: backendFor("websocket_fmp4", engineToken),
    webrtc_sfu: backendFor("webrtc_sfu", engineToken),
    refused: backendFor("auto", "not-the-engine-token"),
  };
  // One origin (one microphone grant); the test picks the backend of each run, and
  // the page's CSP.
  let current: Backend = "auto";
  const chunk = heldChunk();
  const server: PageServer = { csp: null, chunk };
  const { server: backend, base: pageBase } = serveLoopback(async (req) => {
    const path = new URL(req.url).pathname;
    if (/^\/wasm_opus-[A-Z0-9]+\.js$/.test(path)) await chunk.wait();
    const res = await backends[current](req);
    if (!server.csp || path !== "/") return res;
    const headers = new Headers(res.headers);
    headers.set("content-security-policy", server.csp);
    return new Response(res.body, { status: res.status, headers });
  });
  const pulse = await startPulse();
  let page: PageDriver | null = null;
  try {
    page = await options.open(pulse.server, pageBase);
    const ctx = { pulse, mic: engine.mic, client };
    console.log(`${name}: ${page.version}`);
    for (const run of ["auto", "websocket_fmp4"] as const) {
      await t.step(
        `${run}: plays moving video with sound, hears the microphone, shows the end`,
        async () => {
          current = run;
          const plays = run === "auto" ? options.autoPlays : "mse";
          const r = await session(page!, pageBase, ctx, run, plays);
          console.log(
            `${name} ${run} (${plays}): playing ${r.firstPlayMs} ms after ` +
              `Start; sound at RMS ${r.peakRms}`,
          );
        },
      );
    }
    const realtime = page.realtimeThreads;
    if (realtime) {
      // As root a browser may make threads realtime with no bound on their CPU time (a
      // desktop user's go through rtkit, which sets one): WebKit's busy main thread
      // then starved its own sound and media threads on two cores.
      await t.step(
        "after sessions with sound, none of the browser's threads runs realtime",
        async () => assert.deepEqual(await realtime(), []),
      );
    }
    const decoder = options.webCodecs ? "webcodecs" : "mse";
    const said = (what: string, r: Shipped) =>
      console.log(
        `${name} ${what}: first frame ${r.firstFrameMs} ms after the socket ` +
          `opened; glass to glass est. ${r.glassMs} ms`,
      );
    await t.step(
      `websocket_fmp4 as the example page ships it: ${decoder}, transparent, sound, captions`,
      async () => {
        current = "websocket_fmp4";
        said(
          `shipped (${decoder})`,
          await shippedSession(page!, pageBase, ctx, decoder),
        );
      },
    );
    if (options.wasmOpus) {
      current = "websocket_fmp4";
      await wasmOpusSteps(t, page, pageBase, ctx, server, said);
    }
    if (options.autoPlays === "mse") {
      await t.step(
        "webrtc_sfu: the fatal unsupported_media at once, no reconnect",
        async () => {
          current = "webrtc_sfu";
          await openPage(page!, `${pageBase}/?${PAGE_QUERY}`);
          const started = Date.now();
          await page!.eval(`(document.getElementById("start").click(), true)`);
          await until(
            page!,
            `globalThis.avatarPlayer?.state === "closed" &&
              document.getElementById("log").textContent
                .includes("Error: unsupported_media")`,
            "the fatal unsupported_media",
          );
          // Told at once, not after the 15-s start timeout.
          assert.ok(Date.now() - started < 10_000);
          await new Promise((r) => setTimeout(r, 500));
          assert.equal(
            await page!.eval(`globalThis.avatarPlayer.stats.reconnects`),
            0,
          );
          assert.deepEqual(await page!.eval(`globalThis.__problems`), []);
        },
      );
    }
    if (options.rejectsVideo) {
      await t.step(
        "auto, capabilities hidden: the answer rejects the video, the client falls back",
        async () => {
          current = "auto";
          await answerRejected(page!, pageBase);
        },
      );
    }
    if (options.openMutedOnly) {
      const open = options.openMutedOnly;
      await t.step(
        "autoplay refused with sound: the video plays muted, the page is told",
        async () => {
          current = "websocket_fmp4";
          const muted = await open(pulse.server);
          try {
            await mutedStart(muted, pageBase);
          } finally {
            await muted.close();
          }
        },
      );
    }
    await t.step(
      "a session that fails to start: the page shows its status and reason",
      async () => {
        current = "refused";
        await openPage(page!, `${pageBase}/?${PAGE_QUERY}`);
        await page!.eval(`(document.getElementById("start").click(), true)`);
        const shown = await until<string>(page!, ENDED, "the end on the page");
        assert.equal(shown, "failed start_failed");
        assert.deepEqual(await page!.eval(`globalThis.__problems`), []);
      },
    );
  } finally {
    await page?.close();
    await pulse.stop();
    await backend.shutdown();
    await api.shutdown();
    await service.close();
    await engine.close();
    await janus.stop();
  }
}
