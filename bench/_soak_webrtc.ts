/**
 * The `webrtc_sfu` side of the soak (`bench/soak.ts`): headless Chromium playing
 * sessions with the browser client (`AvatarPlayer`, as `bench/transports.ts` does)
 * through a real Janus. The page is served with a small customer backend whose
 * `/token/<id>` calls the service's `client-token` route, so the player's own refreshes
 * (each reconnect) go over REST. A session here gets the same actions as on the
 * socket — typed turns, `interrupt`s, a client-token refresh, a dropped socket (the
 * player redials it) and a takeover by a second player — but no microphone barge-in
 * (no microphone in headless Chromium) and no latency or A/V reading (those come from
 * fMP4 fragments). It is lost when the player says it ended, fails fatally, or decodes
 * no new frame for `FROZEN_MS` (its first within `FIRST_FRAME_MS`).
 */
import { chromium } from "playwright-core";
import type { Browser, Page } from "playwright-core";
import { bundleBrowserClient, bundleFile } from "../examples/backend.ts";
import { ENGINE_TOKEN, post, type Service } from "./_media_service.ts";
import type { SessionWindow } from "./_soak_session.ts";

const TURN_EVERY_S = 4;
const INTERRUPT_EVERY = 5;
const CUT_AFTER_MS = 1500;
const REFRESH_EVERY_S = 45;
const RECONNECT_PERIOD_S = 120;
const FROZEN_MS = 5000;
/** A (new) player's first frame; ICE and DTLS come first. */
const FIRST_FRAME_MS = 30_000;
const LONG_TEXT = "Tell me a long story about the sea, the ships and the " +
  "lighthouse keepers who watched them through the night, please.";

/** The page: players by session id, each on its own `<video>`, and what they saw. */
const PAGE = `<!doctype html><meta charset="utf-8"><title>soak</title>
<script type="module">
import { AvatarPlayer } from "/avatar.js";
const players = new Map();
function open(o, id) {
  const video = document.createElement("video");
  video.muted = true;
  video.playsInline = true;
  document.body.append(video);
  const p = new AvatarPlayer({
    sessionId: id, token: o.token, wsBaseUrl: o.wsBaseUrl, video,
    transport: "webrtc_sfu", iceServers: o.iceServers, microphone: false,
    refreshToken: async () => (await fetch("/token/" + encodeURIComponent(id))).json(),
  });
  return { p, video };
}
globalThis.soak = {
  async start(o) {
    const s = { ...open(o, o.sessionId), ended: null, fatal: null, frames: 0, at: Date.now() };
    const watch = (p) => {
      p.on("ended", (d) => { if (s.p === p) s.ended = d.reason ?? d.status ?? "ended"; });
      p.on("error", (e) => { if (s.p === p && e.fatal) s.fatal = e.code; });
    };
    watch(s.p);
    s.watch = watch;
    s.opts = o;
    players.set(o.sessionId, s);
    await s.p.connect();
  },
  turn(id, text) { players.get(id)?.p.sendText(text); },
  interrupt(id) { players.get(id)?.p.interrupt(); },
  /** Closes the player's socket under it: it redials (a takeover with a fresh token). */
  drop(id) { players.get(id)?.p._ws?.close(); },
  /** A second player takes the session over; the first is closed once it is open. */
  async takeover(id) {
    const s = players.get(id);
    const fresh = await (await fetch("/token/" + encodeURIComponent(id))).json();
    const next = open({ ...s.opts, token: fresh.client_token }, id);
    s.watch(next.p);
    const prev = { p: s.p, video: s.video };
    s.p = next.p; s.video = next.video; s.frames = 0; s.at = Date.now();
    await next.p.connect();
    prev.p.close();
    prev.video.remove();
  },
  /** Per session: ended reason, fatal error, and ms since the last new decoded frame. */
  poll() {
    const out = {};
    const now = Date.now();
    for (const [id, s] of players) {
      const f = s.p.stats.rtc.framesDecoded;
      if (f !== s.frames) { s.frames = f; s.at = now; }
      out[id] = { ended: s.ended, fatal: s.fatal, frames: s.frames, stillMs: now - s.at, reconnects: s.p.stats.reconnects };
    }
    return out;
  },
  close(id) { const s = players.get(id); s?.p.close(); s?.video.remove(); players.delete(id); },
};
</script>`;

interface Polled {
  ended: string | null;
  fatal: string | null;
  /** Frames the current player decoded, and ms since the last new one. */
  frames: number;
  stillMs: number;
  reconnects: number;
}

/** Chromium with the page open, and the page's backend. */
export interface RtcBrowser {
  page: Page;
  close(): Promise<void>;
}

/** Starts the page's server (with its token route on `svc`) and Chromium on it. */
export async function startRtcBrowser(svc: Service): Promise<RtcBrowser> {
  const bundle = await bundleBrowserClient();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const path = new URL(req.url).pathname;
      const script = bundleFile(bundle, path);
      if (script) return script;
      if (path.startsWith("/token/")) {
        const id = decodeURIComponent(path.slice(7));
        const r = await post(
          svc.base,
          `/v1/sessions/${encodeURIComponent(id)}/client-token`,
        );
        return Response.json(r.body, { status: r.status });
      }
      return new Response(PAGE, { headers: { "content-type": "text/html" } });
    },
  );
  let browser: Browser | null = null;
  try {
    browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      headless: true,
      // The soak's own Ctrl-C handling ends the sessions and closes the browser;
      // playwright's would exit the process before the service is stopped.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--autoplay-policy=no-user-gesture-required",
      ],
    });
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${server.addr.port}/`);
    await page.waitForFunction(() => "soak" in globalThis);
    const b = browser;
    return {
      page,
      async close() {
        await b.close().catch(() => {});
        await server.shutdown();
      },
    };
  } catch (e) {
    await browser?.close().catch(() => {});
    await server.shutdown();
    throw e;
  }
}

type Op = "turn" | "interrupt" | "drop" | "takeover" | "close";
type Soak = {
  soak: Record<Op, (id: string, text: string) => unknown> & {
    start(o: unknown): Promise<void>;
    poll(): Record<string, Polled>;
  };
};

/** The page's readings of every player, fetched once a tick by the soak. */
export async function pollRtc(
  rtc: RtcBrowser,
): Promise<Record<string, Polled>> {
  return await rtc.page.evaluate(() =>
    (globalThis as unknown as Soak).soak.poll()
  );
}

/** A soak session played over WebRTC in the page; `tick()` once a second. */
export class RtcSoakSession {
  id = "";
  lost: string | null = null;
  readonly client = null;
  readonly kind: "photo" | "cartoon";
  #t: number;
  #turns = 0;
  #busy = false;
  #reconnects = 0;
  #win: SessionWindow = RtcSoakSession.#empty();

  constructor(
    readonly svc: Service,
    readonly rtc: RtcBrowser,
    readonly engineUrl: string,
    kind: "photo" | "cartoon",
    readonly avatarId: string,
    offsetS: number,
  ) {
    this.kind = kind;
    this.#t = offsetS;
  }

  static #empty(): SessionWindow {
    return {
      latencies: [],
      offsetMs: 0,
      driftMs: 0,
      actions: {},
      problems: [],
    };
  }

  #count(action: string): void {
    this.#win.actions[action] = (this.#win.actions[action] ?? 0) + 1;
  }

  /** Calls the page's `soak[op]` for this session. */
  #call(op: Op, text = ""): Promise<unknown> {
    return this.rtc.page.evaluate(
      ([op, id, text]) =>
        (globalThis as unknown as Soak).soak[op as Op](id, text),
      [op, this.id, text] as const,
    );
  }

  /** Creates the session over REST and plays it in the page until it flows. */
  async start(): Promise<void> {
    const r = await post(this.svc.base, "/v1/sessions", {
      avatar_config: { avatar_id: this.avatarId },
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: this.engineUrl,
          auth_headers: { authorization: `Bearer ${ENGINE_TOKEN}` },
        },
      },
      transport: "webrtc_sfu",
    });
    if (r.status !== 200) {
      throw new Error(`create answered ${r.status} ${JSON.stringify(r.body)}`);
    }
    this.id = String(r.body.session_id);
    await this.rtc.page.evaluate(
      (o) => (globalThis as unknown as Soak).soak.start(o),
      {
        sessionId: this.id,
        token: String(r.body.client_token),
        wsBaseUrl: this.svc.base.replace("http", "ws"),
        iceServers: r.body.stream_metadata?.ice_servers ?? [],
      },
    );
  }

  /** One second: the due action, then the loss checks against `polled` (the page's). */
  async tick(polled?: Polled): Promise<void> {
    if (this.lost || this.#busy || !polled) return;
    this.#busy = true;
    try {
      const t = this.#t++;
      if (polled.ended) return await this.#lose(`ended: ${polled.ended}`);
      if (polled.fatal) return await this.#lose(`fatal ${polled.fatal}`);
      if (polled.frames > 0 && polled.stillMs > FROZEN_MS) {
        return await this.#lose(
          `frozen: no new frame for ${polled.stillMs} ms`,
        );
      }
      if (polled.frames === 0 && polled.stillMs > FIRST_FRAME_MS) {
        return await this.#lose(`no frame within ${polled.stillMs} ms`);
      }
      if (polled.reconnects > this.#reconnects) {
        this.#count("redial");
        this.#reconnects = polled.reconnects;
      }
      if (t % RECONNECT_PERIOD_S === 30) {
        await this.#call("drop");
        this.#count("drop");
      } else if (t % RECONNECT_PERIOD_S === 90) {
        await this.#call("takeover");
        this.#reconnects = 0;
        this.#count("takeover");
      } else if (t % REFRESH_EVERY_S === 10) {
        const r = await post(
          this.svc.base,
          `/v1/sessions/${encodeURIComponent(this.id)}/client-token`,
        );
        if (r.status === 200) this.#count("refresh");
        else this.#win.problems.push(`${this.id}: client-token ${r.status}`);
      } else if (t % TURN_EVERY_S === 0) {
        const cut = ++this.#turns % INTERRUPT_EVERY === 0;
        await this.#call("turn", cut ? LONG_TEXT : "hi");
        this.#count("turn");
        if (cut) {
          setTimeout(() => {
            if (this.lost) return;
            this.#call("interrupt").catch(() => {});
            this.#count("interrupt");
          }, CUT_AFTER_MS);
        }
      }
    } catch (e) {
      this.#win.problems.push(`${this.id}: ${(e as Error).message}`);
    } finally {
      this.#busy = false;
    }
  }

  async #lose(reason: string): Promise<void> {
    this.lost = reason;
    await this.end();
  }

  /** This window's actions and problems, reset. */
  take(): SessionWindow {
    const w = this.#win;
    this.#win = RtcSoakSession.#empty();
    return w;
  }

  /** Ends the session over REST and closes its player. */
  async end(): Promise<void> {
    if (!this.id) return;
    await post(this.svc.base, `/v1/sessions/${this.id}/end`).catch(() => {});
    await this.#call("close").catch(() => {});
  }
}
