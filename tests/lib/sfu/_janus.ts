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

/**
 * Starts Janus on loopback with its own API ports; the caller stops it. Tests that
 * need a small ingest range take one outside the default 21000-21999 (22900-22999),
 * so that Januses of tests running in parallel never share it.
 */
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

/** Hangs up every WebRTC PeerConnection Janus holds (Admin API `hangup_webrtc`). */
export async function hangupAllWebrtc(j: RunningJanus): Promise<number> {
  const admin = async (path: string, janus: string) =>
    await (await fetch(j.adminUrl + path, {
      method: "POST",
      body: JSON.stringify({
        janus,
        transaction: crypto.randomUUID(),
        admin_secret: j.adminSecret,
      }),
    })).json();
  let n = 0;
  for (const sid of (await admin("", "list_sessions")).sessions as number[]) {
    const handles = (await admin(`/${sid}`, "list_handles")).handles ?? [];
    for (const hid of handles as number[]) {
      if (
        (await admin(`/${sid}/${hid}`, "hangup_webrtc")).janus === "success"
      ) {
        n++;
      }
    }
  }
  return n;
}

/**
 * One streaming-plugin request as any API user makes it (its own Janus session and
 * handle, destroyed after): the answer's `plugindata.data`.
 */
export async function streamingRequest(
  url: string,
  token: string,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const post = (path: string, msg: Record<string, unknown>) =>
    fetch(url + path, {
      method: "POST",
      body: JSON.stringify({
        ...msg,
        transaction: crypto.randomUUID(),
        token,
      }),
    }).then((r) => r.json());
  const sid = (await post("", { janus: "create" })).data.id;
  const hid = (await post(`/${sid}`, {
    janus: "attach",
    plugin: "janus.plugin.streaming",
  })).data.id;
  const msg = await post(`/${sid}/${hid}`, { janus: "message", body });
  await post(`/${sid}`, { janus: "destroy" });
  return msg.plugindata.data;
}
