import assert from "node:assert/strict";
import {
  MAX_UNREAD_EVENTS,
  sessionsStream,
} from "../../../lib/console/live.ts";
import { testApp } from "../../_helpers.ts";
import { createSessionViaApi } from "../../routes/admin/_console.ts";

Deno.test("a live sessions feed whose client does not read ends after MAX_UNREAD_EVENTS instead of queueing a snapshot per change", async () => {
  const app = await testApp({
    RENDER_MAX_SESSIONS: "200",
    MAX_CONCURRENT_SESSIONS: "200",
  });
  try {
    const deps = app.app.deps;
    const res = sessionsStream(deps, { tenantId: "admin" }, {}, {
      stillAllowed: () => Promise.resolve(true),
      pollMs: 2,
    });
    // Nobody reads the body while the table changes 3 × MAX_UNREAD_EVENTS times.
    for (let i = 0; i < 3 * MAX_UNREAD_EVENTS; i++) {
      await createSessionViaApi(app);
      await new Promise((r) => setTimeout(r, 15));
    }
    // Reading now: what was queued, then the end of the stream.
    const reader = res.body!.getReader();
    let chunks = 0;
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline) {
      const next = await Promise.race([
        reader.read(),
        new Promise<null>((r) => setTimeout(() => r(null), 500)),
      ]);
      if (next === null) break; // nothing more within 500 ms: still open
      if (next.done) {
        assert.ok(
          chunks <= MAX_UNREAD_EVENTS + 1,
          `${chunks} events were queued`,
        );
        return;
      }
      chunks++;
    }
    await reader.cancel();
    assert.fail(`the feed stayed open with ${chunks} unread events queued`);
  } finally {
    await app.close();
  }
});
