/**
 * `avatar_live_sessions` (DECISIONS 10): the sessions an instance holds live, by status,
 * transport and avatar kind — every combination exposed, at 0 when none.
 */
import assert from "node:assert/strict";
import { connectActive, createSession } from "../../../../lib/media/_live.ts";
import { end, live } from "./_helpers.ts";

Deno.test("avatar_live_sessions counts the live sessions by status, transport and avatar kind", async () => {
  await live(async (s) => {
    const metrics = s.t.app.deps.metrics;
    const series = (text: string) =>
      text.split("\n").filter((l) => l.startsWith("avatar_live_sessions{"));
    const before = series((await metrics.expose()).body);
    // 3 statuses × 2 transports × 2 kinds, all 0.
    assert.equal(before.length, 12, before.join("\n"));
    assert.ok(before.every((l) => l.endsWith(" 0")), before.join("\n"));

    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token, 1);
    const during = series((await metrics.expose()).body);
    assert.deepEqual(during.filter((l) => !l.endsWith(" 0")), [
      'avatar_live_sessions{status="active",transport="websocket_fmp4",avatar_kind="builtin"} 1',
    ]);
    b.close();
    await end(s, c.session_id);
  });
});
