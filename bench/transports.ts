/**
 * The transports side by side (`deno task bench:transports`, also run at the end of
 * `deno task bench:media`): the real service (`main.ts`, built-in renderer with
 * `RENDER_CLOCK_STAMP=true`) as a subprocess, a real Janus (`deno task sfu`'s code), the
 * example engine, and headless Chromium playing sessions with the browser client — the
 * same `AvatarPlayer` on `websocket_fmp4` decoded with WebCodecs onto a canvas, on
 * `websocket_fmp4` over MSE (`decoder: "video"`), and over WebRTC (`webrtc_sfu`).
 *
 * Per session, measured in the page:
 * - socket open → first frame: the player's `open` state → the first video frame
 *   presented (`requestVideoFrameCallback`; on the canvas, the animation frame it was
 *   drawn in plus one display frame);
 * - glass to glass: on every presented frame, its presentation time
 *   (`expectedDisplayTime`; on the canvas as above) minus the wall clock the renderer
 *   drew into it as a barcode (lib/render/clock_stamp.ts): render → encode → transport →
 *   decode → display, on one machine and one clock. (Engine audio reaches a drawn frame
 *   within one frame, 40 ms, more: docs/notes/performance-history.md has the renderer's
 *   own audio latency.)
 * - underruns over the window: the WebCodecs audio jitter buffer's, else the video's
 *   `waiting` events;
 * - A/V offset (WebCodecs): the audio clock minus the shown frame's timestamp, sampled
 *   on every new frame (the `<video>` paths sync inside the browser).
 *
 * One unmeasured session first (the service's and Chromium's cold start). Prints a table
 * and one `RESULT {…}` JSON line. Options: `--sessions <n>` per row (default 3),
 * `--window <s>` of playback per session (default 8), `--fresh-tabs` to play each
 * session in a new tab (each pays its page's media start, as a page loaded for one
 * session does; by default one tab plays them all, as in the earlier rounds),
 * `--browser chromium|firefox|webkit` (default chromium; Firefox ESR and WebKitGTK as
 * the browser matrix drives them, each with its own PulseAudio sink: the rows a browser
 * cannot play say how it failed or what played instead).
 */
import { chromium } from "playwright-core";
import { openFirefox, openWebKit } from "../tests/e2e/_drivers.ts";
import { startPulse } from "../tests/e2e/_desktop.ts";
import { bundleBrowserClient, bundleFile } from "../examples/backend.ts";
import { FUZZ_ADMIN_KEY, startService } from "../fuzz/_lib.ts";
import { startExampleEngine } from "../scripts/example_engine.ts";
import { startJanus } from "../lib/sfu/mod.ts";
import { PAGE, type Played } from "./_transports_page.ts";

/** The rows: a transport and how the client decodes it. */
const ROWS = {
  websocket_fmp4: { transport: "websocket_fmp4", decoder: "video" },
  websocket_fmp4_webcodecs: { transport: "websocket_fmp4", decoder: "auto" },
  webrtc_sfu: { transport: "webrtc_sfu", decoder: "video" },
} as const;
type Row = keyof typeof ROWS;
const TRANSPORTS = Object.keys(ROWS) as Row[];
const TLS = new URL("../tests/fixtures/tls/", import.meta.url);
const ENGINE_TOKEN = "bench-engine-token-0123456789";

function opt(name: string, def: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : def;
}

/** The breakdown's steps, in the order they happen. */
const STEPS = [
  "media.init",
  "first_segment",
  "webrtc.offer",
  "webrtc.candidate",
  "webrtc.answer",
  "ice_connected",
  "dtls_connected",
  "first_rtp",
  "first_decoded",
  "loadeddata",
  "playing",
] as const;

type BrowserName = "chromium" | "firefox" | "webkit";

function browserName(): BrowserName {
  const i = Deno.args.indexOf("--browser");
  const name = i >= 0 ? Deno.args[i + 1] : "chromium";
  if (name !== "chromium" && name !== "firefox" && name !== "webkit") {
    throw new Error("--browser must be chromium, firefox or webkit");
  }
  return name;
}

/** A page that runs `PAGE`'s `play`. */
interface Tab {
  goto(url: string): Promise<void>;
  play(o: Record<string, unknown>): Promise<Played>;
  close(): Promise<void>;
}

/** The browser the rows play in: tabs of it, its version, its teardown. */
async function openTabs(name: BrowserName): Promise<{
  version: string;
  newTab(): Promise<Tab>;
  close(): Promise<void>;
}> {
  if (name === "chromium") {
    const browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--autoplay-policy=no-user-gesture-required",
      ],
    });
    return {
      version: `chromium/${browser.version()}`,
      newTab: async () => {
        const p = await browser.newPage();
        return {
          goto: async (url) => void await p.goto(url),
          play: (o) =>
            p.evaluate((o) =>
              (globalThis as unknown as {
                play: (o: unknown) => Promise<Played>;
              }).play(o), o),
          close: () => p.close(),
        };
      },
      close: () => browser.close(),
    };
  }
  // One page per driver: a fresh tab is the same page loaded again.
  const pulse = await startPulse();
  const driver = name === "firefox"
    ? await openFirefox(pulse.server)
    : await openWebKit(pulse.server);
  const tab: Tab = {
    goto: (url) => driver.goto(url),
    play: (o) => driver.eval<Played>(`play(${JSON.stringify(o)})`),
    close: () => Promise.resolve(),
  };
  return {
    version: driver.version,
    newTab: () => Promise.resolve(tab),
    close: async () => {
      await driver.close();
      await pulse.stop();
    },
  };
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

async function main(): Promise<void> {
  const perTransport = opt("sessions", 3);
  const windowMs = opt("window", 8) * 1000;
  const janus = await startJanus();
  const engine = startExampleEngine({
    port: 0,
    cert: await Deno.readTextFile(new URL("localhost.crt", TLS)),
    key: await Deno.readTextFile(new URL("localhost.key", TLS)),
    token: ENGINE_TOKEN,
  });
  const svc = await startService({
    ...janus.env,
    RENDER_CLOCK_STAMP: "true",
  });
  const bundle = await bundleBrowserClient();
  const page = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) =>
      bundleFile(bundle, new URL(req.url).pathname) ??
        new Response(PAGE, { headers: { "content-type": "text/html" } }),
  );
  const pageUrl = `http://127.0.0.1:${page.addr.port}/`;
  const browser = await openTabs(browserName());
  console.log(`browser: ${browser.version}`);
  const results = Object.fromEntries(
    TRANSPORTS.map((t) => [t, [] as Played[]]),
  ) as Record<Row, Played[]>;
  try {
    const freshTabs = Deno.args.includes("--fresh-tabs");
    const shared = freshTabs ? null : await browser.newTab();
    await shared?.goto(pageUrl);
    /** One session of `row` (in a new tab with `--fresh-tabs`). */
    const playOne = async (row: Row, ms: number): Promise<Played> => {
      const { transport, decoder } = ROWS[row];
      const res = await fetch(`${svc.base}/v1/sessions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${FUZZ_ADMIN_KEY}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({
          provider_type: "external_engine",
          provider_config: {
            external_engine: {
              url: engine.url.replace("localhost", "127.0.0.1"),
              auth_headers: { authorization: `Bearer ${ENGINE_TOKEN}` },
            },
          },
          transport,
        }),
      });
      const s = await res.json();
      if (res.status !== 200) throw new Error(JSON.stringify(s));
      const tab = shared ?? await browser.newTab();
      try {
        if (!shared) await tab.goto(pageUrl);
        return await tab.play({
          sessionId: s.session_id,
          token: s.client_token,
          expiresAt: s.expires_at,
          wsBaseUrl: svc.wsBase,
          transport: s.transport,
          iceServers: s.stream_metadata.ice_servers,
          decoder,
          windowMs: ms,
        });
      } finally {
        if (!shared) await tab.close();
        await fetch(
          `${svc.base}/v1/sessions/${encodeURIComponent(s.session_id)}/end`,
          {
            method: "POST",
            headers: { authorization: `Bearer ${FUZZ_ADMIN_KEY}` },
          },
        ).then((r) => r.body?.cancel());
        // The session's teardown (renderer, SFU viewer) settles before the next row,
        // which otherwise pays for it in its first frame.
        await new Promise((r) => setTimeout(r, 1000));
      }
    };
    // One unmeasured session: the service's and Chromium's cold start.
    await playOne(TRANSPORTS[0], 1000);
    for (let i = 0; i < perTransport; i++) {
      // Alternate, so every row sees the same machine load.
      for (const row of TRANSPORTS) {
        results[row].push(await playOne(row, windowMs));
      }
    }
  } finally {
    await browser.close();
    await page.shutdown();
    await svc.stop();
    await engine.close();
    await janus.stop();
  }

  const summary = Object.fromEntries(TRANSPORTS.map((t) => {
    const runs = results[t];
    const first = runs.map((r) => r.firstFrameMs).filter((x): x is number =>
      x !== null
    );
    const g2g = runs.flatMap((r) => r.g2g);
    const av = runs.flatMap((r) => r.avOffset);
    const buffered = runs.flatMap((r) => r.buffered.map((b) => b[0]));
    const queued = runs.flatMap((r) => r.buffered.map((b) => b[1]));
    const outLat = runs.flatMap((r) => r.buffered.map((b) => b[2]));
    return [t, {
      decoders: [...new Set(runs.map((r) => r.decoder))],
      sessions: runs.length,
      first_frame_ms_p50: Math.round(pct(first, 0.5)),
      first_frame_ms_max: Math.round(Math.max(...first)),
      glass_to_glass_ms_p50: Math.round(pct(g2g, 0.5)),
      glass_to_glass_ms_p95: Math.round(pct(g2g, 0.95)),
      frames: g2g.length,
      underruns: runs.reduce((n, r) => n + r.underruns, 0),
      window_s: windowMs / 1000,
      av_offset_ms_p50: av.length ? Math.round(pct(av, 0.5)) : null,
      av_offset_ms_p95: av.length ? Math.round(pct(av, 0.95)) : null,
      audio_buffered_ms_p50: buffered.length
        ? Math.round(pct(buffered, 0.5))
        : null,
      audio_queued_ms_p50: queued.length ? Math.round(pct(queued, 0.5)) : null,
      audio_output_latency_ms_p50: outLat.length
        ? Math.round(pct(outLat, 0.5))
        : null,
      errors: runs.flatMap((r) => r.errors),
      steps_ms_p50: Object.fromEntries(
        STEPS.flatMap((k) => {
          const xs = runs.flatMap((r) => k in r.steps ? [r.steps[k]] : []);
          return xs.length ? [[k, Math.round(pct(xs, 0.5))]] : [];
        }),
      ),
    }];
  }));
  console.log(
    "row                       sessions  open→first frame p50/max (ms)  glass→glass p50/p95 (ms)  frames  underruns  A/V p50/p95 (ms)",
  );
  for (const t of TRANSPORTS) {
    const s = summary[t];
    const av = s.av_offset_ms_p50 === null
      ? "-"
      : `${s.av_offset_ms_p50} / ${s.av_offset_ms_p95}`;
    console.log(
      `${t.padEnd(25)} ${String(s.sessions).padStart(8)}  ${
        `${s.first_frame_ms_p50} / ${s.first_frame_ms_max}`.padStart(29)
      }  ${
        `${s.glass_to_glass_ms_p50} / ${s.glass_to_glass_ms_p95}`.padStart(24)
      }  ${String(s.frames).padStart(6)}  ${String(s.underruns).padStart(9)}  ${
        av.padStart(16)
      }`,
    );
  }
  for (const t of TRANSPORTS) {
    const steps = Object.entries(summary[t].steps_ms_p50)
      .map(([k, v]) => `${k} ${v}`).join(" → ");
    console.log(`${t}: socket open → ${steps} (p50 ms after open)`);
  }
  console.log(`RESULT ${JSON.stringify(summary)}`);
}

if (import.meta.main) await main();
