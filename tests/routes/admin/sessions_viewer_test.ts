/**
 * The console's session page shows what the session's viewer last reported
 * (`client.stats`), written to KV by the instance holding it, whichever instance serves
 * the page; malformed or expired records show nothing.
 */
import assert from "node:assert/strict";
import {
  authJson,
  engineCreateBody,
  TEST_ADMIN_KEY,
  testApp,
} from "../../_helpers.ts";
import {
  persistViewerStats,
  ViewerStats,
  viewerStatsKey,
} from "../../../lib/media/viewer_stats.ts";
import { get, signIn } from "./_console.ts";
import { AppMetrics } from "../../../lib/metrics/registry.ts";

Deno.test("session detail shows the viewer's latest client.stats, as the holder stored it", async (t) => {
  const app = await testApp();
  try {
    const deps = app.app.deps;
    const c = await signIn(app);
    const res = await app.request("/v1/sessions", {
      method: "POST",
      headers: authJson(TEST_ADMIN_KEY),
      body: JSON.stringify(engineCreateBody()),
    });
    assert.equal(res.status, 200);
    const id = (await res.json()).session_id as string;
    const shown = async () => {
      const r = await get(app, c, `/admin/sessions/${encodeURIComponent(id)}`);
      assert.equal(r.status, 200);
      const html = await r.text();
      return html.match(/data-testid="viewer-stats">(.*?)<\/dd>/s)?.[1]
        .replace(/<[^>]+>/g, "");
    };
    await t.step("no report yet", async () => {
      assert.equal(await shown(), "no report in the last 2 minutes");
    });
    await t.step("a report taken by the holder", async () => {
      const v = new ViewerStats(
        deps.metrics,
        deps.now,
        persistViewerStats(deps, id),
      );
      v.report({
        type: "client.stats",
        decoder: "webcodecs",
        first_frame_ms: 140,
        jitter_buffer_ms: 42,
        underruns: 3,
        frames_shown: 250,
        frames_dropped: 4,
      });
      let text: string | undefined;
      for (let i = 0; i < 50; i++) {
        text = await shown();
        if (text?.startsWith("webcodecs")) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.match(
        text ?? "",
        /^webcodecs · first frame 140 ms · jitter buffer 42 ms · 3 underruns · 250 frames shown, 4 dropped · \d+ s ago$/,
      );
    });
    await t.step("a malformed record shows nothing", async () => {
      await deps.kv.set(viewerStatsKey(id), {
        stats: { type: "client.stats", decoder: "<script>" },
        at: Date.now(),
      });
      assert.equal(await shown(), "no report in the last 2 minutes");
    });
  } finally {
    await app.close();
  }
});

Deno.test("ViewerStats writes its latest report for the console at most every 15 s", () => {
  let now = 0;
  const written: number[] = [];
  const v = new ViewerStats(
    new AppMetrics(),
    () => now,
    (l) => written.push(l.at),
  );
  for (let t = 0; t <= 40_000; t += 5000) {
    now = t;
    v.report({ type: "client.stats", decoder: "mse" });
  }
  assert.deepEqual(written, [0, 15_000, 30_000]);
});
