/**
 * The browser client's end-to-end stack: the real service and the example engine on
 * loopback, the example customer backend serving the example page with the bundled
 * browser client, and headless Chromium with autoplay and a fake microphone.
 */
import type { Page } from "playwright-core";
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

export interface PlayerStack {
  /** The service's app (its deps, for checks on its state). */
  service: TestApp;
  browser: Browser;
  page: Page;
  /** The backend client of the service, with the admin key. */
  client: AvatarClient;
  /** Origin of the example page. */
  pageBase: string;
  close(): Promise<void>;
}

/**
 * Starts the stack; `onBackendRequest` sees every request the example page makes, `env`
 * goes to the service (e.g. a Janus's SFU variables), `transport` to the backend's
 * creates.
 */
export async function startPlayerStack(options: {
  prefix: string;
  viewport: { width: number; height: number };
  onBackendRequest?: (req: Request) => void;
  env?: Record<string, string>;
  transport?: "auto" | "webrtc_sfu" | "websocket_fmp4";
}): Promise<PlayerStack> {
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
  const client = new AvatarClient({
    baseUrl: serviceBase,
    apiKey: TEST_ADMIN_KEY,
  });
  const backendHandler = createBackend({
    client,
    wsBaseUrl: serviceBase.replace(/^http/, "ws"),
    engine: {
      url: engine.url,
      authHeaders: { authorization: `Bearer ${engineToken}` },
    },
    browserBundle: await bundleBrowserClient(),
    transport: options.transport,
  });
  const { server: backend, base: pageBase } = serveLoopback((req) => {
    options.onBackendRequest?.(req);
    return backendHandler(req);
  });
  const browser = await openBrowser({
    prefix: options.prefix,
    permissions: ["microphone"],
    origin: pageBase,
    media: true,
    viewport: options.viewport,
  });
  return {
    service,
    browser,
    page: browser.page,
    client,
    pageBase,
    async close() {
      await browser.close();
      await backend.shutdown();
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
