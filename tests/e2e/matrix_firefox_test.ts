/**
 * The browser matrix in Firefox ESR without OpenH264 (tests/e2e/_matrix.ts): its
 * WebRTC has no H.264, so `auto` falls back to fMP4 over MSE on the same socket (the
 * page forced to MSE); the example page as it ships plays with WebCodecs.
 */
import { runMatrix } from "./_matrix.ts";
import { openFirefox } from "./_drivers.ts";

Deno.test("browser matrix: Firefox ESR (no H.264 in WebRTC) plays auto and websocket_fmp4", async (t) => {
  await runMatrix(t, "firefox", {
    open: (pulse) => openFirefox(pulse),
    autoPlays: "mse",
    webCodecs: true,
    rejectsVideo: true,
  });
});
