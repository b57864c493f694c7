/**
 * Which browsers play the socket with WebCodecs (client/webcodecs/support.ts), by their
 * user agents: `auto` in Chromium, Firefox and WebKit on Linux; Safari only when asked.
 * Which audio decoder each gets: `AudioDecoder`, or in WebKit on Linux (whose decoded
 * `AudioData` cannot be read) the WebAssembly Opus decoder, Opus only, held until it
 * loads, and silent where WebAssembly may not run. Firefox's output latency is not read.
 */
import assert from "node:assert/strict";
import {
  aacDecodable,
  audioDecoders,
  loadWasmOpus,
  outputLatencyReadable,
  webCodecsAvailable,
  webCodecsPreferred,
} from "../../../client/webcodecs/support.ts";
import {
  type AudioFrameDecoder,
  DeferredAudioDecoder,
  WebCodecsAudioDecoder,
} from "../../../client/webcodecs/audio_decoder.ts";
import { monoTrack, SILENT_FRAME } from "./_audio.ts";
import { poll } from "../../lib/render/_helpers.ts";

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

/** An `AudioDecoder` that takes its configuration (Deno has none). */
class StubAudioDecoder {
  state = "unconfigured";
  configure() {
    this.state = "configured";
  }
  close() {
    this.state = "closed";
  }
}

/**
 * Runs `fn` with the WebCodecs constructors present (Deno has none of them), but for
 * those named in `without`.
 */
async function withApis(
  fn: () => void | Promise<void>,
  without: string[] = [],
): Promise<void> {
  const g = globalThis as Record<string, unknown>;
  for (const name of APIS) {
    if (without.includes(name)) continue;
    g[name] = name === "AudioDecoder" ? StubAudioDecoder : class {};
  }
  try {
    await fn();
  } finally {
    for (const name of APIS) delete g[name];
  }
}

/**
 * Runs `fn` where WebAssembly is refused, as a CSP without 'wasm-unsafe-eval' does
 * (WebKit refuses the instance, Chromium the compile too).
 */
async function wasmRefused(fn: () => Promise<void>): Promise<void> {
  const { compile, instantiate } = WebAssembly;
  const refuse = () =>
    Promise.reject(new WebAssembly.CompileError("Refused: wasm-unsafe-eval"));
  WebAssembly.compile = refuse;
  WebAssembly.instantiate = refuse as typeof WebAssembly.instantiate;
  try {
    await fn();
  } finally {
    Object.assign(WebAssembly, { compile, instantiate });
  }
}

const SINK = { pcm: () => {}, error: () => {} };

Deno.test("decoder auto: WebCodecs in Chromium, Edge, Firefox and WebKitGTK; MediaSource in Safari", async () => {
  await withApis(() => {
    assert.equal(webCodecsPreferred(UA.chromium), true);
    assert.equal(webCodecsPreferred(UA.edge), true);
    assert.equal(webCodecsPreferred(UA.firefox), true);
    assert.equal(webCodecsPreferred(UA.safari), false);
    assert.equal(webCodecsPreferred(UA.webkitgtk), true);
  });
});

Deno.test("decoder webcodecs: wherever the APIs exist; WebKit on Linux needs WebAssembly, not AudioDecoder", async () => {
  await withApis(() => {
    assert.equal(webCodecsAvailable(UA.safari), true);
    assert.equal(webCodecsAvailable(UA.firefox), true);
    assert.equal(webCodecsAvailable(UA.webkitgtk), true);
  });
  await withApis(() => {
    assert.equal(webCodecsAvailable(UA.webkitgtk), true);
    assert.equal(webCodecsAvailable(UA.chromium), false);
    assert.equal(webCodecsAvailable(UA.safari), false);
  }, ["AudioDecoder"]);
  await withApis(() => {
    const wasm = Object.getOwnPropertyDescriptor(globalThis, "WebAssembly")!;
    delete (globalThis as Record<string, unknown>).WebAssembly;
    try {
      assert.equal(webCodecsAvailable(UA.webkitgtk), false);
      assert.equal(webCodecsAvailable(UA.chromium), true);
    } finally {
      Object.defineProperty(globalThis, "WebAssembly", wasm);
    }
  });
  await withApis(() => {
    assert.equal(webCodecsAvailable(UA.webkitgtk), false, "no VideoDecoder");
  }, ["VideoDecoder"]);
  assert.equal(webCodecsAvailable(UA.chromium), false, "no APIs, no WebCodecs");
});

Deno.test("AAC is decoded everywhere but WebKit on Linux", () => {
  assert.equal(aacDecodable(UA.webkitgtk), false);
  assert.equal(aacDecodable(UA.chromium), true);
  assert.equal(aacDecodable(UA.firefox), true);
  assert.equal(aacDecodable(UA.safari), true);
});

Deno.test("audioDecoders(): AudioDecoder for Chromium, Firefox and Safari, any codec", async () => {
  await withApis(() => {
    for (const ua of [UA.chromium, UA.firefox, UA.safari]) {
      const make = audioDecoders(ua, () => assert.fail("no WebAssembly here"));
      assert.ok(make, ua);
      for (const codec of ["opus", "mp4a.40.2"]) {
        const dec = make(monoTrack(codec), SINK);
        assert.ok(dec instanceof WebCodecsAudioDecoder, `${ua} ${codec}`);
        dec.close();
      }
    }
  });
  assert.equal(audioDecoders(UA.chromium), null, "no APIs");
});

Deno.test("audioDecoders(): WebKitGTK decodes Opus with the WebAssembly decoder once it loads, AAC not at all", async () => {
  await withApis(async () => {
    let loaded!: (m: Awaited<ReturnType<typeof loadWasmOpus>>) => void;
    const loading = new Promise<Awaited<ReturnType<typeof loadWasmOpus>>>(
      (r) => loaded = r,
    );
    const make = audioDecoders(UA.webkitgtk, () => loading);
    assert.ok(make);
    assert.equal(make(monoTrack("mp4a.40.2"), SINK), null);
    const out: number[] = [];
    const dec = make(monoTrack("opus"), {
      pcm: (_, ptsUs) => out.push(ptsUs),
      error: (m) => assert.fail(m),
    });
    assert.ok(dec instanceof DeferredAudioDecoder);
    // Frames that come while it loads are held, then decoded in order.
    dec.decode(SILENT_FRAME, 0, 20_000);
    dec.decode(SILENT_FRAME, 20_000, 20_000);
    loaded(await loadWasmOpus());
    await poll(() => out.length === 2);
    dec.decode(SILENT_FRAME, 40_000, 20_000);
    await poll(() => out.length === 3);
    assert.deepEqual(out, [0, 20_000, 40_000]);
    dec.close();
  }, ["AudioDecoder"]);
});

Deno.test("loadWasmOpus(): null where the page's CSP forbids WebAssembly; its decoders then hear nothing", async () => {
  await wasmRefused(async () => {
    assert.equal(await loadWasmOpus(), null);
  });
  await withApis(async () => {
    const make = audioDecoders(UA.webkitgtk, () => Promise.resolve(null))!;
    const out: number[] = [];
    const dec = make(monoTrack("opus"), {
      pcm: (_, ptsUs) => out.push(ptsUs),
      error: (m) => assert.fail(m),
    })!;
    dec.decode(SILENT_FRAME, 0, 20_000);
    await new Promise((r) => setTimeout(r, 50));
    dec.decode(SILENT_FRAME, 20_000, 20_000);
    assert.deepEqual(out, []);
    dec.close();
  });
  assert.ok(await loadWasmOpus(), "and it loads where WebAssembly runs");
});

Deno.test("DeferredAudioDecoder: a decoder made after it was closed is closed, and hears nothing", async () => {
  let made!: (d: AudioFrameDecoder) => void;
  const calls: string[] = [];
  const deferred = new DeferredAudioDecoder(new Promise((r) => made = r));
  deferred.decode(SILENT_FRAME, 0, 20_000);
  deferred.close();
  made({
    decode: () => calls.push("decode"),
    close: () => calls.push("close"),
  });
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(calls, ["close"]);
});

Deno.test("the output latency is read everywhere but Firefox (reading it stopped its tab)", () => {
  assert.equal(outputLatencyReadable(UA.firefox), false);
  assert.equal(outputLatencyReadable(UA.chromium), true);
  assert.equal(outputLatencyReadable(UA.safari), true);
});
