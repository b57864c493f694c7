/**
 * Choosing and reaching a render backend: createRenderBackend() picks the built-in or
 * the remote renderer from config; the remote renderer's open() fails on an
 * unreachable worker and times out on a silent one.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../../lib/config.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { createRenderBackend } from "../../../lib/render/mod.ts";
import { AppMetrics } from "../../../lib/metrics/registry.ts";
import { createRemoteRenderer } from "../../../lib/render/remote.ts";
import {
  assertNoEncoders,
  RecordingSink,
  startWorker,
  WORKER_TOKEN as TOKEN,
} from "./_helpers.ts";
import { isStartError, OPEN } from "./_remote.ts";

Deno.test("remote renderer open() fails when the worker is unreachable", async () => {
  const listener = Deno.listen({ port: 0, hostname: "127.0.0.1" });
  const port = listener.addr.port;
  listener.close();
  const backend = createRemoteRenderer({ log: memoryLogger() }, {
    url: `http://127.0.0.1:${port}`,
    token: TOKEN,
  });
  await assert.rejects(backend.open(OPEN), isStartError("failed"));
});

Deno.test("remote renderer open() times out on a silent worker", async () => {
  const hung = Promise.withResolvers<void>();
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    async () => {
      await hung.promise;
      return new Response(null, { status: 503 });
    },
  );
  const backend = createRemoteRenderer({ log: memoryLogger() }, {
    url: `http://127.0.0.1:${server.addr.port}`,
    token: TOKEN,
    startTimeoutMs: 100,
  });
  await assert.rejects(backend.open(OPEN), isStartError("timeout"));
  hung.resolve();
  await server.shutdown();
});

Deno.test("createRenderBackend() picks the backend from config", async (t) => {
  const deps = (env: Record<string, string>) => ({
    config: loadConfig(env),
    log: memoryLogger(),
    onClose: [] as Array<() => void | Promise<void>>,
    metrics: new AppMetrics(),
  });

  await t.step(
    "built-in without RENDER_WORKER_URL, its audio latency in the metrics, stopped on close",
    async () => {
      const d = deps({});
      const backend = createRenderBackend(d);
      assert.equal(d.onClose.length, 1);
      const session = await backend.open(OPEN);
      const sink = new RecordingSink();
      session.attach(sink);
      await sink.until(() => sink.inits.length === 1);
      // A push's time to the fragment carrying it reaches the app's histogram.
      session.pushAudio(new Int16Array(4800).fill(2000), 48000);
      await sink.until(() => session.stats().audioLatencyMs.length === 1);
      const text = (await d.metrics.expose()).body;
      assert.match(text, /avatar_render_audio_to_fragment_seconds_count 1/);
      const [ms] = session.stats().audioLatencyMs;
      assert.match(
        text,
        new RegExp(
          `avatar_render_audio_to_fragment_seconds_sum ${ms / 1000}(\\D|$)`,
        ),
      );
      for (const hook of d.onClose) await hook();
      assertNoEncoders();
    },
  );

  await t.step("remote with RENDER_WORKER_URL", async () => {
    const worker = startWorker();
    try {
      const d = deps({
        RENDER_WORKER_URL: worker.url,
        RENDER_WORKER_TOKEN: TOKEN,
      });
      const backend = createRenderBackend(d);
      assert.equal(d.onClose.length, 0);
      const session = await backend.open(OPEN);
      const sink = new RecordingSink();
      session.attach(sink);
      await sink.until(() => sink.inits.length === 1);
      assert.equal(
        (await session.stop({ graceful: false, timeoutMs: 0 })).clean,
        true,
      );
    } finally {
      await worker.close();
    }
  });

  await t.step("a worker URL without a token is misconfigured", async () => {
    const backend = createRenderBackend(
      deps({ RENDER_WORKER_URL: "http://127.0.0.1:1" }),
    );
    await assert.rejects(backend.open(OPEN), isStartError("misconfigured"));
  });
});
