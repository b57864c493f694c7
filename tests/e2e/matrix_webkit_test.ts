/**
 * The browser matrix in WebKitGTK's MiniBrowser (tests/e2e/_matrix.ts): it has no
 * `RTCPeerConnection`, so `auto` falls back to fMP4 over MSE on the same socket; its
 * WebCodecs cannot give decoded audio back (`AudioData.copyTo` crashes the page), so
 * the example page plays MSE, even asked for WebCodecs.
 */
import { runMatrix } from "./_matrix.ts";
import { openWebKit } from "./_drivers.ts";

Deno.test("browser matrix: WebKitGTK (no RTCPeerConnection) plays auto and websocket_fmp4", async (t) => {
  await runMatrix(t, "webkitgtk", {
    open: (pulse) => openWebKit(pulse),
    autoPlays: "mse",
    forcedWebCodecsPlaysMse: true,
    openMutedOnly: (pulse) => openWebKit(pulse, "allow-without-sound"),
  });
});
