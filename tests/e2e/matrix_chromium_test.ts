/**
 * The browser matrix in Chromium (tests/e2e/_matrix.ts): `auto` plays over WebRTC
 * through Janus, `websocket_fmp4` over MSE, and the example page as it ships with
 * WebCodecs.
 */
import { runMatrix } from "./_matrix.ts";
import { openChromium } from "./_drivers.ts";

Deno.test("browser matrix: Chromium plays auto (WebRTC) and websocket_fmp4", async (t) => {
  await runMatrix(t, "chromium", {
    open: openChromium,
    autoPlays: "rtc",
    webCodecs: true,
  });
});
