import assert from "node:assert/strict";
import { memoryLogger } from "../../../lib/log.ts";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import {
  LOGIN_MAX_FAILURES,
  reserveLoginAttempt,
} from "../../../lib/console/login_limit.ts";

Deno.test("failed sign-ins from one IPv6 /64 share one window: rotating addresses within it buys nothing", async () => {
  const deps = await createDeps({
    env: { KV_PATH: ":memory:" },
    log: memoryLogger(),
  });
  try {
    for (let i = 1; i <= LOGIN_MAX_FAILURES; i++) {
      const r = await reserveLoginAttempt(
        deps,
        `2001:db8:1:2::${i.toString(16)}`,
      );
      assert.equal(r.ok, true, `attempt ${i}`);
    }
    const next = await reserveLoginAttempt(deps, "2001:db8:1:2:ffff:1:2:3");
    assert.equal(next.ok, false, "another address of the same /64");
    const other = await reserveLoginAttempt(deps, "2001:db8:1:3::1");
    assert.equal(other.ok, true, "another /64 has its own window");
    // IPv4 is counted per address, as before.
    assert.equal((await reserveLoginAttempt(deps, "192.0.2.1")).ok, true);
  } finally {
    await closeDeps(deps);
  }
});
