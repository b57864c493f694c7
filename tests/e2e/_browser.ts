/**
 * Fixtures for the real-Chromium end-to-end tests: a loopback server, the example
 * engine on wss with the test certificates, headless Chromium on a fresh profile with
 * page errors (and optionally console errors and CSP violations) collected, and
 * desktop + phone screenshots under test-output/screenshots/.
 */
import {
  type BrowserContext,
  chromium,
  type Page,
  type ViewportSize,
} from "playwright-core";
import {
  type ExampleEngine,
  type ExampleEngineOptions,
  startExampleEngine,
} from "../../scripts/example_engine.ts";

export const CHROMIUM = "/usr/bin/chromium";
export const SHOTS = new URL("../../test-output/screenshots/", import.meta.url);
export const PHONE: ViewportSize = { width: 390, height: 844 };
export const DESKTOP: ViewportSize = { width: 1366, height: 900 };
/** Bounds every wait so a broken build fails instead of hanging; nothing asserts on time. */
export const WAIT = { timeout: 60_000, polling: 100 } as const;

const TLS = new URL("../fixtures/tls/", import.meta.url);

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** Autoplay without a gesture and a fake microphone that needs no prompt. */
const MEDIA_FLAGS = [
  "--autoplay-policy=no-user-gesture-required",
  "--use-fake-ui-for-media-stream",
  "--use-fake-device-for-media-stream",
];

/**
 * Fails with how to install Chromium when it is missing, and makes the screenshot
 * folder: the first call of every e2e test.
 */
export async function requireChromium(): Promise<void> {
  try {
    await Deno.stat(CHROMIUM);
  } catch {
    throw new Error(
      `Chromium not found at ${CHROMIUM}. Install it (Debian/Ubuntu: \`sudo apt-get install -y chromium\`; \`deno task test\` does this when run as root) and run the tests again.`,
    );
  }
  await Deno.mkdir(SHOTS, { recursive: true });
}

/** Serves `handler` on 127.0.0.1 (port 0); `base` is its http:// origin. */
export function serveLoopback(
  handler: Deno.ServeHandler<Deno.NetAddr>,
): { server: Deno.HttpServer<Deno.NetAddr>; base: string } {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    handler,
  );
  return { server, base: `http://127.0.0.1:${server.addr.port}` };
}

/** The example engine on wss://127.0.0.1 with the test certificates. */
export async function startTlsEngine(
  options: ExampleEngineOptions = {},
): Promise<ExampleEngine> {
  return startExampleEngine({
    port: 0,
    hostname: "127.0.0.1",
    cert: await Deno.readTextFile(new URL("localhost.crt", TLS)),
    key: await Deno.readTextFile(new URL("localhost.key", TLS)),
    ...options,
  });
}

export interface BrowserOptions {
  /** Prefix of the fresh user-data-dir (removed again by `close()`). */
  prefix: string;
  /** Permissions granted to `origin`. */
  permissions: string[];
  origin: string;
  /** Autoplay and a fake microphone. */
  media?: boolean;
  viewport?: ViewportSize;
  /** Also collect `console.error` messages into `problems` (page errors always are). */
  consoleErrors?: boolean;
  /** Collect every page's CSP violations into `csp`. */
  csp?: boolean;
  /**
   * A PulseAudio server (`unix:…`) the browser plays its sound to, unmuted (headless
   * Chromium is muted otherwise).
   */
  pulseServer?: string;
}

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** Uncaught page errors, and console errors when asked for. */
  problems: string[];
  /** CSP violations as "directive blocked-uri", when asked for. */
  csp: string[];
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/** Headless Chromium on a fresh profile with the shared flags, one page open. */
export async function openBrowser(options: BrowserOptions): Promise<Browser> {
  const profile = await Deno.makeTempDir({ prefix: options.prefix });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: options.media ? [...FLAGS, ...MEDIA_FLAGS] : FLAGS,
    viewport: options.viewport ?? DESKTOP,
    ...(options.pulseServer
      ? {
        ignoreDefaultArgs: ["--mute-audio"],
        env: { ...Deno.env.toObject(), PULSE_SERVER: options.pulseServer },
      }
      : {}),
  });
  await context.grantPermissions(options.permissions, {
    origin: options.origin,
  });
  const csp: string[] = [];
  if (options.csp) {
    await context.exposeFunction("reportCsp", (v: string) => csp.push(v));
    await context.addInitScript(() => {
      const w = globalThis as unknown as {
        reportCsp?: (violation: string) => void;
      };
      document.addEventListener("securitypolicyviolation", (e) => {
        w.reportCsp?.(`${e.violatedDirective} ${e.blockedURI}`);
      });
    });
  }
  const page = context.pages()[0] ?? await context.newPage();
  const problems: string[] = [];
  if (options.consoleErrors) {
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(m.text());
    });
  }
  page.on("pageerror", (e) => problems.push(String(e)));
  return {
    context,
    page,
    problems,
    csp,
    async close() {
      await context.close();
      await Deno.remove(profile, { recursive: true });
    },
  };
}

/** Full-page screenshots at desktop and phone width: `<name>-{desktop,phone}.png`. */
export async function shoot(page: Page, name: string): Promise<void> {
  const sizes = [["desktop", DESKTOP], ["phone", PHONE]] as const;
  for (const [suffix, size] of sizes) {
    await page.setViewportSize(size);
    await page.screenshot({
      path: new URL(`${name}-${suffix}.png`, SHOTS).pathname,
      fullPage: true,
    });
  }
  await page.setViewportSize(DESKTOP);
}
