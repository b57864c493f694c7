/**
 * Probes of the example page for the browser matrix (./_matrix.ts): bounded waits, the
 * page's problems, a hash of the video's picture, the end line, and hearing an answer.
 */
import type { Pulse } from "./_desktop.ts";
import type { PageDriver } from "./_drivers.ts";

/** Bounds every wait so a broken build fails instead of hanging. */
const WAIT_MS = 60_000;
/** RMS of 16-bit samples over 50 ms that counts as audible (about -30 dBFS). */
const AUDIBLE_RMS = 1000;

/** Polls `expression` in the page until it is truthy; returns its value. */
export async function until<T>(
  page: PageDriver,
  expression: string,
  what: string,
): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  let last: unknown;
  while (Date.now() < deadline) {
    last = await page.eval<T>(expression);
    if (last) return last as T;
    await new Promise((r) => setTimeout(r, 100));
  }
  const seen = await page.eval<unknown>(PAGE_STATE).catch((e) => String(e));
  throw new Error(
    `waited too long for ${what} (last: ${JSON.stringify(last)}; page: ${
      JSON.stringify(seen)
    })`,
  );
}

/** What the example page shows and saw, for a wait's failure. */
const PAGE_STATE = `(() => ({
  url: location.href,
  ready: document.readyState,
  started: typeof document.getElementById("start")?.onclick,
  scripts: performance.getEntriesByType("resource")
    .filter((e) => e.name.endsWith(".js"))
    .map((e) => \`\${new URL(e.name).pathname} \${Math.round(e.duration)} ms\`),
  startDisabled: document.getElementById("start")?.disabled ?? null,
  player: globalThis.avatarPlayer?.state ?? null,
  shown: document.getElementById("state")?.textContent ?? null,
  problems: globalThis.__problems ?? null,
  log: (document.getElementById("log")?.textContent ?? "").slice(-400),
  stats: globalThis.avatarPlayer?.stats ?? null,
}))()`;

/** What the page played while an answer was not heard. */
const HEARD_STATE = `(() => {
  const v = document.querySelector("video");
  return {
    video: v && { paused: v.paused, muted: v.muted, volume: v.volume,
      time: v.currentTime, ready: v.readyState },
    log: (document.getElementById("log")?.textContent ?? "").slice(-400),
    stats: globalThis.avatarPlayer?.stats ?? null,
  };
})()`;

/** No microphone frame at the engine for this long: the muted microphone drained. */
const MIC_DRAINED_MS = 800;

/** Polls `check` until it holds. */
export async function waitFor(
  check: () => boolean,
  what: string,
): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`waited too long for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Opens the example page at `url` once its script runs (its Start button has a
 * handler), collecting its problems (`COLLECT`).
 */
export async function openPage(page: PageDriver, url: string): Promise<void> {
  await page.goto(url);
  await until(
    page,
    `typeof document.getElementById("start")?.onclick === "function"`,
    "the page's script",
  );
  await page.eval(COLLECT);
}

/** Page errors and unhandled rejections, collected from the start. */
export const COLLECT = `(() => {
  globalThis.__problems = [];
  addEventListener("error", (e) => __problems.push(String(e.message)));
  addEventListener("unhandledrejection", (e) => __problems.push(String(e.reason)));
  const v = document.querySelector("video");
  v.addEventListener("playing", () => globalThis.__playing ??= performance.now());
  return true;
})()`;

/** A hash of the video's picture, drawn small (changes as the avatar moves). */
export const FRAME = `(() => {
  const v = document.querySelector("video");
  const c = document.createElement("canvas");
  c.width = 64;
  c.height = 36;
  const g = c.getContext("2d");
  g.drawImage(v, 0, 0, 64, 36);
  const d = g.getImageData(0, 0, 64, 36).data;
  let h = 0, sum = 0;
  for (let i = 0; i < d.length; i += 4) {
    h = (h * 31 + d[i] + 7 * d[i + 1] + 13 * d[i + 2]) >>> 0;
    sum += d[i] + d[i + 1] + d[i + 2];
  }
  return { h, lit: sum / (d.length / 4) };
})()`;

/** The example page's end line, once shown: "<status> <reason>". */
export const ENDED = `!document.getElementById("ended").hidden &&
  document.getElementById("end-status").textContent + " " +
  document.getElementById("end-reason").textContent`;

/**
 * The example page's options: the `<video>` paths (MSE, WebRTC) on a boxed background,
 * which the matrix watches in every browser (WebCodecs: tests/e2e/webcodecs_test.ts).
 */
export const PAGE_QUERY = "decoder=video&bg=studio";

/** How the player plays now, from its stats. */
export const PLAYS = `(() => {
  const s = globalThis.avatarPlayer.stats;
  return s.rtc.framesDecoded > 0 ? "rtc" : s.segmentsAppended > 0 ? "mse" : null;
})()`;

/**
 * Mutes the microphone, waits until the engine got its last frames (`mic`: what the
 * engine heard) and until the sink's recording runs, types "hello avatar", waits until
 * `shown` (the answer on the page) and until the answer is audible on the browser's
 * sink; the peak RMS heard. Frames still on their way when the text went out could
 * start a speech onset at the engine after the answer began: a barge-in that cut it,
 * and no sound came.
 */
export async function hearAnswer(
  page: PageDriver,
  pulse: Pulse,
  shown: string,
  mic: { frames: number },
): Promise<number> {
  await page.eval(`(document.getElementById("mute").click(), true)`);
  let last = mic.frames, since = Date.now();
  await waitFor(() => {
    if (mic.frames !== last) (last = mic.frames, since = Date.now());
    return Date.now() - since >= MIC_DRAINED_MS;
  }, "the muted microphone's last frames at the engine");
  const rec = pulse.record();
  try {
    // parec delivers its first samples ~1 s after it starts (longer under load): an
    // answer sent before then could be over before anything was recorded.
    await waitFor(() => rec.state().seconds > 0, "the recording to start");
    await page.eval(`(() => {
      document.getElementById("text").value = "hello avatar";
      document.getElementById("send").click();
      return true;
    })()`);
    await until(page, shown, "the avatar's answer");
    try {
      await waitFor(() => rec.peak() >= AUDIBLE_RMS, "audible sound");
    } catch (err) {
      // What played instead, for the failure's diagnosis.
      const seen = await page.eval<unknown>(HEARD_STATE).catch((e) =>
        String(e)
      );
      const sinks = await pulse.describe();
      throw new Error(
        `${(err as Error).message} (peak RMS ${Math.round(rec.peak())}; ` +
          `recorder: ${JSON.stringify(rec.state())}; page: ${
            JSON.stringify(seen)
          }; pulse: ${sinks})`,
      );
    }
    return Math.round(rec.peak());
  } finally {
    await rec.stop();
  }
}
