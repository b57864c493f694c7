/**
 * A real Janus for a test, started through the same code as `deno task sfu`. A machine
 * without Janus fails the test with how to install it (never a skip).
 */
import {
  type JanusOptions,
  type RunningJanus,
  startJanus,
} from "../../../lib/sfu/launch.ts";

export type { RunningJanus };

/** Starts Janus on loopback with its own ports; the caller stops it. */
export function startTestJanus(
  options: JanusOptions = {},
): Promise<RunningJanus> {
  return startJanus({ debugLevel: 2, ...options });
}

/** The Admin API's sessions list (every Janus session, ours and viewers'). */
export async function janusSessions(j: RunningJanus): Promise<number[]> {
  const res = await fetch(j.adminUrl, {
    method: "POST",
    body: JSON.stringify({
      janus: "list_sessions",
      transaction: crypto.randomUUID(),
      admin_secret: j.adminSecret,
    }),
  });
  const body = await res.json();
  return body.sessions as number[];
}
