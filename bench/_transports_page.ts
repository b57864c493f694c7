/**
 * The page of \`deno task bench:transports\` (./transports.ts): it plays one session with
 * the bundled browser client and measures it — glass to glass from the clock stamp the
 * renderer draws into each frame, first frame, the signalling steps, underruns and, for
 * WebCodecs, the A/V offset and what is buffered — and what it hands back (\`Played\`).
 */
/** The page: plays one session with the bundled client and measures it. */
export const PAGE = `<!doctype html><meta charset="utf-8"><title>bench</title>
<video id="v" muted playsinline width="384" height="384"></video>
<canvas id="c" width="384" height="16" hidden></canvas>
<canvas id="w" width="384" height="384"></canvas>
<script type="module">
import { AvatarPlayer } from "/avatar.js";
const BITS = 32;
// Bench-only breakdown of socket open → first frame: the page's WebSocket and
// RTCPeerConnection are wrapped to note when each signalling step happened.
let marks = {};
const mark = (k) => { if (!(k in marks)) marks[k] = performance.now(); };
const NativeWs = globalThis.WebSocket;
globalThis.WebSocket = class extends NativeWs {
  constructor(...a) {
    super(...a);
    this.addEventListener("message", (ev) => {
      if (typeof ev.data !== "string") return mark("first_segment");
      const t = JSON.parse(ev.data).type;
      if (t === "webrtc.offer" || t === "webrtc.candidate" || t === "media.init") mark(t);
    });
  }
  send(d) {
    if (typeof d === "string" && d.includes('"webrtc.answer"')) mark("webrtc.answer");
    return super.send(d);
  }
};
const NativePc = globalThis.RTCPeerConnection;
if (NativePc) globalThis.RTCPeerConnection = class extends NativePc {
  constructor(...a) {
    super(...a);
    this.addEventListener("iceconnectionstatechange", () => {
      if (this.iceConnectionState === "connected") mark("ice_connected");
    });
    this.addEventListener("connectionstatechange", () => {
      if (this.connectionState === "connected") mark("dtls_connected");
    });
    const poll = async () => {
      if (this.connectionState === "closed") return;
      (await this.getStats()).forEach((r) => {
        if (r.type !== "inbound-rtp" || r.kind !== "video") return;
        if (r.packetsReceived > 0) mark("first_rtp");
        if (r.framesDecoded > 0) mark("first_decoded");
      });
      if (!("first_decoded" in marks)) setTimeout(poll, 5);
    };
    setTimeout(poll, 5);
  }
};
function stampOf(ctx, width) {
  const block = Math.floor(width / BITS) & ~1;
  const px = ctx.getImageData(0, 0, width, block).data;
  let v = 0;
  for (let b = 0; b < BITS; b++) {
    const i = ((block >> 1) * width + b * block + (block >> 1)) * 4;
    v = v * 2 + ((px[i] + px[i + 1] + px[i + 2]) / 3 > 128 ? 1 : 0);
  }
  return v;
}
globalThis.play = (o) => new Promise((resolve) => {
  const video = document.getElementById("v");
  const canvas = document.getElementById("c");
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  marks = {};
  video.addEventListener("loadeddata", () => mark("loadeddata"), { once: true });
  video.addEventListener("playing", () => mark("playing"), { once: true });
  const out = {
    openAt: 0, firstFrameMs: null, g2g: [], errors: [], steps: {}, underruns: 0,
    avOffset: [], buffered: [], decoder: null,
  };
  const drawn = document.getElementById("w");
  const player = new AvatarPlayer({
    sessionId: o.sessionId, token: o.token, expiresAt: o.expiresAt,
    wsBaseUrl: o.wsBaseUrl, video, transport: o.transport, decoder: o.decoder,
    canvas: drawn, iceServers: o.iceServers, microphone: false, reconnect: false,
    refreshToken: async () => { throw new Error("no refresh in the bench"); },
  });
  let waiting = 0;
  video.addEventListener("waiting", () => { if (out.firstFrameMs !== null) waiting++; });
  player.on("state", ({ state }) => {
    if (state === "open" && !out.openAt) out.openAt = performance.now();
  });
  let until = 0;
  let underrunsAtStart = 0;
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    for (const [k, t] of Object.entries(marks)) out.steps[k] = t - out.openAt;
    const s = player.stats;
    out.decoder = s.decoder;
    out.underruns = s.decoder === "webcodecs"
      ? s.webcodecs.underruns - underrunsAtStart
      : waiting;
    player.close();
    resolve(out);
  };
  // A row this browser cannot play (no H.264 in its WebRTC) ends at its fatal error.
  player.on("error", ({ code, fatal }) => {
    out.errors.push(code);
    if (fatal) finish();
  });
  /** One presented frame: its stamp read from \`source\` (\`width\` wide), shown at \`shown\`. */
  const sample = (source, width, shown) => {
    if (out.firstFrameMs === null && out.openAt) {
      out.firstFrameMs = shown - out.openAt;
      until = shown + o.windowMs;
      underrunsAtStart = player.stats.webcodecs.underruns;
    }
    canvas.width = width;
    ctx.drawImage(source, 0, 0);
    const wall = (performance.timeOrigin + shown) % 2 ** 32;
    const d = wall - stampOf(ctx, width);
    if (d > -1000 && d < 10000) out.g2g.push(d);
    return until && shown > until;
  };
  const onFrame = (_now, meta) => {
    if (player.stats.decoder === "webcodecs") return;
    if (video.videoWidth > 0 && sample(video, video.videoWidth, meta.expectedDisplayTime)) {
      return finish();
    }
    video.requestVideoFrameCallback(onFrame);
  };
  video.requestVideoFrameCallback(onFrame);
  // WebCodecs draws on the canvas in an animation frame; it is on screen one display
  // frame later. A new frame is one with a new timestamp.
  let lastShown = null;
  let lastRaf = 0;
  let vsync = 1000 / 60;
  const onRaf = (now) => {
    if (lastRaf) vsync = 0.9 * vsync + 0.1 * (now - lastRaf);
    lastRaf = now;
    const w = player.stats.webcodecs;
    if (player.stats.decoder === "webcodecs" && w.shownMs !== null && w.shownMs !== lastShown) {
      lastShown = w.shownMs;
      if (w.clockMs !== null) {
        out.avOffset.push(w.clockMs - w.shownMs);
        out.buffered.push([w.latencyMs, w.queuedMs, w.outputLatencyMs]);
      }
      if (sample(drawn, drawn.width, now + vsync)) return finish();
    }
    if (player.stats.decoder !== "mse" && player.stats.decoder !== "webrtc") {
      requestAnimationFrame(onRaf);
    }
  };
  requestAnimationFrame(onRaf);
  player.connect().catch((e) => { out.errors.push(String(e)); resolve(out); });
  setTimeout(finish, o.windowMs + 20000);
});
</script>`;

export interface Played {
  openAt: number;
  firstFrameMs: number | null;
  g2g: number[];
  errors: string[];
  /** When each signalling step happened, in ms after socket open (bench breakdown). */
  steps: Record<string, number>;
  underruns: number;
  /** WebCodecs: audio clock minus the shown frame's timestamp, per new frame (ms). */
  avOffset: number[];
  /**
   * WebCodecs, per new frame (ms): decoded audio not yet heard, audio queued in the
   * worklet, the output's latency after it.
   */
  buffered: Array<[number, number, number]>;
  decoder: string | null;
}
