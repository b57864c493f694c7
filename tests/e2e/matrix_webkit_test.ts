/**
 * The browser matrix in WebKitGTK's MiniBrowser (tests/e2e/_matrix.ts): it has no
 * `RTCPeerConnection`, so `auto` falls back to fMP4 over MSE on the same socket; the
 * example page as it ships plays WebCodecs, its Opus decoded by the WebAssembly decoder
 * (`AudioData.copyTo` crashes WebKitGTK's page), and MSE where the page's CSP forbids
 * WebAssembly or the stream turns AAC.
 */
import { runMatrix } from "./_matrix.ts";
import { openWebKit } from "./_drivers.ts";

Deno.test("browser matrix: WebKitGTK (no RTCPeerConnection) plays auto and websocket_fmp4", async (t) => {
  await runMatrix(t, "webkitgtk", {
    open: (pulse) => openWebKit(pulse),
    autoPlays: "mse",
    webCodecs: true,
    wasmOpus: true,
    openMutedOnly: (pulse) => openWebKit(pulse, "allow-without-sound"),
  });
});
