/**
 * Which browsers play the socket with WebCodecs (client/webcodecs/support.ts), by their
 * user agents: `auto` in Chromium and Firefox; never WebKit on Linux, whose decoded
 * audio cannot be read; Safari only when asked. Firefox's output latency is not read.
 */
import assert from "node:assert/strict";
import {
  outputLatencyReadable,
  webCodecsAvailable,
  webCodecsPreferred,
} from "../../../client/webcodecs/support.ts";

const UA = {
  chromium:
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/141.0.0.0 Safari/537.36",
  edge:
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0 Safari/537.36 Edg/141.0.0.0",
  firefox:
    "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0",
  webkitgtk:
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/26.0 Safari/605.1.15",
  safari:
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/26.0 Safari/605.1.15",
};

const APIS = [
  "VideoDecoder",
  "AudioDecoder",
  "AudioWorkletNode",
  "EncodedVideoChunk",
] as const;

/** Runs `fn` with the WebCodecs constructors present (Deno has none of them). */
function withApis(fn: () => void): void {
  const g = globalThis as Record<string, unknown>;
  for (const name of APIS) g[name] = class {};
  try {
    fn();
  } finally {
    for (const name of APIS) delete g[name];
  }
}

Deno.test("decoder auto: WebCodecs in Chromium, Edge and Firefox; MediaSource in Safari and WebKitGTK", () => {
  withApis(() => {
    assert.equal(webCodecsPreferred(UA.chromium), true);
    assert.equal(webCodecsPreferred(UA.edge), true);
    assert.equal(webCodecsPreferred(UA.firefox), true);
    assert.equal(webCodecsPreferred(UA.safari), false);
    assert.equal(webCodecsPreferred(UA.webkitgtk), false);
  });
});

Deno.test("decoder webcodecs: wherever the APIs exist, except WebKit on Linux (reading its AudioData crashes the page)", () => {
  withApis(() => {
    assert.equal(webCodecsAvailable(UA.safari), true);
    assert.equal(webCodecsAvailable(UA.firefox), true);
    assert.equal(webCodecsAvailable(UA.webkitgtk), false);
  });
  assert.equal(webCodecsAvailable(UA.chromium), false, "no APIs, no WebCodecs");
});

Deno.test("the output latency is read everywhere but Firefox (reading it stopped its tab)", () => {
  assert.equal(outputLatencyReadable(UA.firefox), false);
  assert.equal(outputLatencyReadable(UA.chromium), true);
  assert.equal(outputLatencyReadable(UA.safari), true);
});
