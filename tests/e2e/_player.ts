/**
 * The browser client's end-to-end stack: the real service and the example engine on
 * loopback, the example customer backend serving the example page with the bundled
 * browser client, and headless Chromium with autoplay and a fake microphone. The
 * backend and browser part (`startPlayerFront`) also runs against a service started
 * elsewhere, e.g. a control plane in its own process.
 */
import type { Page } from "playwright-core";
import type { AvatarPlayer } from "../../client/browser.ts";
import { AvatarClient } from "../../client/server.ts";
import { bundleBrowserClient, createBackend } from "../../examples/backend.ts";
import { TEST_ADMIN_KEY, type TestApp, testApp } from "../_helpers.ts";
import {
  type Browser,
  openBrowser,
  requireChromium,
  serveLoopback,
  startTlsEngine,
  WAIT,
} from "./_browser.ts";

export interface PlayerFront {
  browser: Browser;
  page: Page;
  /** The backend client of the service, with the admin key. */
  client: AvatarClient;
  /** Origin of the example page. */
  pageBase: string;
  /** Closes the browser and the backend. */
  close(): Promise<void>;
}

export interface FrontOptions {
  prefix: string;
  viewport: { width: number; height: number };
  /** Sees every request the example page makes. */
  onBackendRequest?: (req: Request) => void;
  /** What the backend's creates ask for. */
  transport?: "auto" | "webrtc_sfu" | "websocket_fmp4";
  /** The `webhook_url` the backend's creates give. */
  webhookUrl?: string;
  /** A built page the backend serves instead of the example page. */
  siteDir?: string;
}

/**
 * The customer's side of a running service at `serviceBase`: the example backend (its
 * client and the page's media sockets both on `serviceBase`), creating sessions on
 * `engine` with `Bearer <token>`, and Chromium on its page.
 */
export async function startPlayerFront(
  serviceBase: string,
  engine: { url: string; token: string },
  options: FrontOptions,
): Promise<PlayerFront> {
  await requireChromium();
  const client = new AvatarClient({
    baseUrl: serviceBase,
    apiKey: TEST_ADMIN_KEY,
  });
  const backendHandler = createBackend({
    client,
    wsBaseUrl: serviceBase.replace(/^http/, "ws"),
    engine: {
      url: engine.url,
      authHeaders: { authorization: `Bearer ${engine.token}` },
    },
    browserBundle: options.siteDir ? undefined : await bundleBrowserClient(),
    siteDir: options.siteDir,
    transport: options.transport,
    webhookUrl: options.webhookUrl,
  });
  const { server: backend, base: pageBase } = serveLoopback((req) => {
    options.onBackendRequest?.(req);
    return backendHandler(req);
  });
  let browser: Browser;
  try {
    browser = await openBrowser({
      prefix: options.prefix,
      permissions: ["microphone"],
      origin: pageBase,
      media: true,
      viewport: options.viewport,
    });
  } catch (err) {
    await backend.shutdown();
    throw err;
  }
  return {
    browser,
    page: browser.page,
    client,
    pageBase,
    async close() {
      await browser.close();
      await backend.shutdown();
    },
  };
}

export interface PlayerStack extends PlayerFront {
  /** The service's app (its deps, for checks on its state). */
  service: TestApp;
  /** The service's origin on loopback. */
  serviceBase: string;
  /** The engine sessions are created on, and its bearer token. */
  engine: { url: string; token: string };
}

/**
 * Starts the stack: the service in this process, the engine, and the front on them;
 * `env` goes to the service (e.g. a Janus's SFU variables).
 */
export async function startPlayerStack(
  options: FrontOptions & { env?: Record<string, string> },
): Promise<PlayerStack> {
  await requireChromium();
  const engineToken = "e2e-engine-token";
  const engine = await startTlsEngine({ token: engineToken });
  const service = await testApp({
    ALLOW_PRIVATE_NETWORK_TARGETS: "true",
    ...options.env,
  });
  const { server: api, base: serviceBase } = serveLoopback((req, info) =>
    service.app.handler(req, info)
  );
  const front = await startPlayerFront(
    serviceBase,
    { url: engine.url, token: engineToken },
    options,
  );
  return {
    ...front,
    service,
    serviceBase,
    engine: { url: engine.url, token: engineToken },
    async close() {
      await front.close();
      await api.shutdown();
      await service.close();
      await engine.close();
    },
  };
}

/** Waits until the page's video has moved `seconds` and `frames` past `from`. */
export async function waitPlaying(
  page: Page,
  from: { time: number; frames: number },
  seconds: number,
  frames: number,
): Promise<void> {
  await page.waitForFunction(
    ([t, f]) => {
      const v = document.querySelector("video")!;
      return !v.paused && v.currentTime > t &&
        v.getVideoPlaybackQuality().totalVideoFrames > f;
    },
    [from.time + seconds, from.frames + frames],
    WAIT,
  );
}

/** The example page exposes its player as `globalThis.avatarPlayer`. */
type PageWin = { avatarPlayer: AvatarPlayer };

/**
 * Loads the example page, clicks Start and waits until the player is open. Resolves
 * with the session id and the media socket's URL.
 */
export async function startOnPage(
  page: Page,
  pageBase: string,
  /**
   * The page's options: by default the `<video>` (MSE) path on a boxed background,
   * which the tests of the video element watch.
   */
  query = "decoder=video&bg=studio",
): Promise<{
  id: string;
  socketUrl: string;
}> {
  await page.goto(`${pageBase}/?${query}`);
  await page.getByRole("button", { name: "Start", exact: true }).click();
  await page.waitForFunction(
    () => (globalThis as unknown as PageWin).avatarPlayer?.state === "open",
    undefined,
    WAIT,
  );
  const socketUrl = await page.evaluate(() =>
    (globalThis as unknown as PageWin).avatarPlayer._ws!.url
  );
  const id = decodeURIComponent(new URL(socketUrl).pathname.split("/")[3]);
  return { id, socketUrl };
}
