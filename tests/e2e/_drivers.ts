/**
 * The browsers of the matrix (tests/e2e/matrix_*_test.ts), each driven the way its
 * engine allows and reduced to what the matrix needs: open a URL, evaluate a script in
 * the page, close. Each plays its sound to the given PulseAudio server and has a
 * microphone that needs no prompt.
 *
 * - Chromium (Debian `chromium`) with playwright-core, as the other e2e tests.
 * - Firefox ESR (Debian `firefox-esr`) over WebDriver BiDi with puppeteer-core, on a
 *   fresh profile that cannot fetch the OpenH264 plugin: its WebRTC has no H.264, as
 *   on a fresh profile offline or under a policy. Fake microphone (a tone).
 * - WebKitGTK (Debian `webkit2gtk-driver`: WebKitWebDriver and MiniBrowser) over
 *   WebDriver with selenium-webdriver, on an Xvfb display. WebKitGTK's WebRTC is off by
 *   default (no `RTCPeerConnection`); its mock capture device is the microphone.
 */
import puppeteer from "puppeteer-core";
import { Builder, type WebDriver } from "selenium-webdriver";
import { openBrowser, requireChromium } from "./_browser.ts";
import { startXvfb } from "./_desktop.ts";

export const FIREFOX = "/usr/bin/firefox-esr";
export const WEBKIT_DRIVER = "/usr/bin/WebKitWebDriver";
/** Where each WebKit run's driver and browser output goes. */
const WEBKIT_LOGS =
  new URL("../../test-output/webkit/", import.meta.url).pathname;
export const MINIBROWSER =
  "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";

/** One browser with one page. */
export interface PageDriver {
  /** e.g. `firefox/153.7.0`. */
  version: string;
  goto(url: string): Promise<void>;
  /** The value of a JavaScript expression in the page (JSON-serialisable). */
  eval<T = unknown>(expression: string): Promise<T>;
  close(): Promise<void>;
  /** The browser's threads that run realtime (SCHED_FIFO or SCHED_RR), where known. */
  realtimeThreads?(): Promise<string[]>;
}

/**
 * The threads of the processes in process group `group` whose scheduling policy is
 * realtime, as `comm (tid)`, read from /proc (field 5 of a process's stat is its group,
 * field 41 of a thread's its policy: 1 FIFO, 2 RR).
 */
export async function realtimeThreadsOf(group: number): Promise<string[]> {
  // The fields after the command name, which may hold spaces and parentheses.
  const fields = async (path: string) => {
    const stat = await Deno.readTextFile(path).catch(() => "");
    const end = stat.lastIndexOf(")");
    return end < 0 ? null : {
      comm: stat.slice(stat.indexOf("(") + 1, end),
      rest: stat.slice(end + 2).split(" "),
    };
  };
  const out: string[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    const proc = await fields(`/proc/${e.name}/stat`);
    if (Number(proc?.rest[5 - 3]) !== group) continue;
    const tasks = await Array.fromAsync(
      Deno.readDir(`/proc/${e.name}/task`),
    ).catch(() => []);
    for (const task of tasks) {
      const t = await fields(`/proc/${e.name}/task/${task.name}/stat`);
      const policy = Number(t?.rest[41 - 3]);
      if (policy === 1 || policy === 2) out.push(`${t!.comm} (${task.name})`);
    }
  }
  return out;
}

async function require(path: string, pkg: string, name: string) {
  if (!await Deno.stat(path).then(() => true, () => false)) {
    throw new Error(
      `${name} not found at ${path}. Install it (Debian/Ubuntu: \`sudo apt-get install -y ${pkg}\`; \`deno task test\` does this when run as root) and run the tests again.`,
    );
  }
}

/** Headless Chromium (playwright-core), sound on, fake microphone. */
export async function openChromium(
  pulseServer: string,
  origin: string,
): Promise<PageDriver> {
  await requireChromium();
  const b = await openBrowser({
    prefix: "matrix-chromium-",
    permissions: ["microphone"],
    origin,
    media: true,
    pulseServer,
  });
  const version = `chromium/${b.context.browser()?.version() ?? ""}`;
  return {
    version,
    goto: async (url) => void await b.page.goto(url),
    eval: <T>(expression: string) => b.page.evaluate(expression) as Promise<T>,
    async close() {
      if (b.problems.length > 0) {
        console.error(`chromium page errors: ${b.problems.join("; ")}`);
      }
      await b.close();
    },
  };
}

/** Headless Firefox ESR over WebDriver BiDi (puppeteer-core). */
export async function openFirefox(pulseServer: string): Promise<PageDriver> {
  await require(FIREFOX, "firefox-esr", "Firefox ESR");
  const profile = await Deno.makeTempDir({ prefix: "matrix-firefox-" });
  const browser = await puppeteer.launch({
    browser: "firefox",
    executablePath: FIREFOX,
    protocol: "webDriverBiDi",
    headless: true,
    userDataDir: profile,
    extraPrefsFirefox: {
      // No OpenH264 download: the plugin manager has nowhere to fetch it from.
      "media.gmp-manager.updateEnabled": false,
      "media.gmp-manager.url": "http://127.0.0.1:9/",
      "media.gmp-gmpopenh264.autoupdate": false,
      "media.autoplay.default": 0,
      // Web Audio too, as Chromium's flag allows it (the bench plays without a click).
      "media.autoplay.block-webaudio": false,
      "media.navigator.streams.fake": true,
      "media.navigator.permission.disabled": true,
    },
    env: { ...Deno.env.toObject(), PULSE_SERVER: pulseServer },
  });
  const page = await browser.newPage();
  return {
    version: await browser.version(),
    goto: async (url) => void await page.goto(url),
    eval: <T>(expression: string) => page.evaluate(expression) as Promise<T>,
    async close() {
      await browser.close();
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    },
  };
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/**
 * MiniBrowser (WebKitGTK) on its own Xvfb display, over WebDriver (selenium);
 * `autoplay` is its policy (`allow-without-sound`: muted video only).
 */
export async function openWebKit(
  pulseServer: string,
  autoplay: "allow" | "allow-without-sound" = "allow",
): Promise<PageDriver> {
  await require(WEBKIT_DRIVER, "webkit2gtk-driver", "WebKitWebDriver");
  await require(MINIBROWSER, "webkit2gtk-driver", "MiniBrowser");
  await require("/usr/bin/Xvfb", "xvfb", "Xvfb");
  const x = await startXvfb();
  const port = freePort();
  // A session of its own (setsid: same pid, its own process group), so that closing
  // ends MiniBrowser and its web processes too, even after the driver died: an
  // orphaned MiniBrowser kept the log's pipe open and the run waited on it.
  // Without CAP_SYS_NICE, as a desktop user runs it: as root WebKit makes its web
  // process's main thread and every AudioWorklet thread SCHED_RR with no RLIMIT_RTTIME
  // (a user's go through rtkit, which bounds them), and on two cores they starved the
  // threads that carry its sound to PulseAudio and its MSE pipeline (silent answers,
  // seeks taking seconds, a page that stopped answering).
  const driverProc = new Deno.Command("setsid", {
    args: [
      "setpriv",
      "--bounding-set=-sys_nice",
      "--inh-caps=-sys_nice",
      WEBKIT_DRIVER,
      `--port=${port}`,
    ],
    env: { DISPLAY: x.display, PULSE_SERVER: pulseServer },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // What WebKitWebDriver, MiniBrowser and its web process print (a web process that
  // crashes says why here): kept per run for a failure's diagnosis.
  await Deno.mkdir(WEBKIT_LOGS, { recursive: true });
  const log = await Deno.open(`${WEBKIT_LOGS}driver-${port}.log`, {
    write: true,
    create: true,
    truncate: true,
  });
  const logged = driverProc.stderr.pipeTo(log.writable).catch(() => {});
  let stopping: Promise<void> | null = null;
  const stopAll = () =>
    stopping ??= (async () => {
      try {
        Deno.kill(-driverProc.pid, "SIGTERM");
      } catch {
        // The group is gone already.
      }
      await driverProc.status;
      await logged;
      await x.stop();
    })();
  let wd: WebDriver;
  try {
    wd = await connectWebKit(port, autoplay);
  } catch (err) {
    await stopAll();
    throw err;
  }
  const caps = await wd.getCapabilities();
  // A web process that deadlocks (WebKitGTK 2.50: its main thread inside a GStreamer
  // state change, docs/notes/performance-history.md) answers WebDriver never; the
  // step fails after WEBKIT_ANSWER_MS and the browser is ended, not the run hung.
  const answered = async <T>(what: string, p: Promise<T>): Promise<T> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await Promise.race([
        p,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            void stopAll();
            reject(
              new Error(
                `WebKit's page did not answer ${what} in ${WEBKIT_ANSWER_MS} ms (its web process hung; ended)`,
              ),
            );
          }, WEBKIT_ANSWER_MS);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  };
  return {
    version: `webkitgtk/${caps.get("browserVersion")}`,
    goto: (url) => answered(`goto ${url}`, wd.get(url)),
    eval: <T>(expression: string) =>
      answered(
        "a script",
        wd.executeScript(`return (${expression});`) as Promise<T>,
      ),
    async close() {
      await answered("quit", wd.quit()).catch(() => {});
      await stopAll();
    },
    realtimeThreads: () => realtimeThreadsOf(driverProc.pid),
  };
}

/**
 * Longest a WebKit page may take to answer one WebDriver command: the slowest the
 * matrix asks (a navigation, a script) answer within seconds.
 */
const WEBKIT_ANSWER_MS = 90_000;

/** A WebDriver session of MiniBrowser, once WebKitWebDriver listens. */
async function connectWebKit(
  port: number,
  autoplay: string,
): Promise<WebDriver> {
  let last: unknown;
  for (let i = 0; i < 50; i++) {
    try {
      return await new Builder()
        .usingServer(`http://127.0.0.1:${port}`)
        .withCapabilities({
          browserName: "MiniBrowser",
          "webkitgtk:browserOptions": {
            binary: MINIBROWSER,
            args: [
              "--automation",
              `--autoplay-policy=${autoplay}`,
              "--enable-media-stream=true",
              "--enable-mock-capture-devices=true",
            ],
          },
        })
        .build();
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw last;
}
