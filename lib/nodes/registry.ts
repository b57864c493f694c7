/**
 * The media nodes a control plane can hand sessions to: the instance records
 * (lib/media/presence.ts) of role `media` with a fresh heartbeat and a URL, not
 * draining, most free render slots first. A node that stops heartbeating drops out of
 * the list by itself.
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";
import { heartbeatFresh, type InstanceRecord } from "../media/presence.ts";

export interface MediaNode {
  id: string;
  /** Origin at which the control plane calls the node and relays media sockets. */
  url: string;
  /** Free render slots at the node's last heartbeat. */
  free: number;
  max: number;
  /** Whether it has a realtime SFU, so can take `webrtc_sfu` sessions. */
  sfu: boolean;
}

/** Whether the control plane may send credentials to `url` (https, or http when allowed). */
export function handoffUrlAllowed(deps: AppDeps, url: string): boolean {
  if (url.startsWith("https://")) return true;
  return url.startsWith("http://") && deps.config.allowPrivateNetworkTargets;
}

/**
 * The live media nodes, in the order to try them: most free slots first, ties in random
 * order (so concurrent creates spread), full nodes last (their count may be stale).
 */
export async function mediaNodes(deps: AppDeps): Promise<MediaNode[]> {
  const now = deps.now();
  const nodes: (MediaNode & { tie: number })[] = [];
  const iter = deps.kv.list<InstanceRecord>({ prefix: ["instances"] });
  await kvTry((async () => {
    for await (const e of iter) {
      const rec = e.value;
      if (
        rec.role !== "media" || !rec.url || rec.draining ||
        !heartbeatFresh(deps, rec, now)
      ) {
        continue;
      }
      if (!handoffUrlAllowed(deps, rec.url)) {
        deps.log.warn("media node skipped: its URL is not https", {
          node: String(e.key[1]),
        });
        continue;
      }
      nodes.push({
        id: String(e.key[1]),
        url: rec.url,
        free: rec.render?.free ?? 0,
        max: rec.render?.max ?? 0,
        sfu: rec.sfu === true,
        tie: Math.random(),
      });
    }
  })());
  nodes.sort((a, b) => b.free - a.free || a.tie - b.tie);
  return nodes.map(({ tie: _, ...node }) => node);
}

/**
 * Whether this deployment can make `webrtc_sfu` sessions: its own SFU, or on a control
 * plane, any live media node's.
 */
export async function deploymentHasSfu(deps: AppDeps): Promise<boolean> {
  if (deps.config.role !== "control") return deps.sfu !== null;
  return (await mediaNodes(deps)).some((n) => n.sfu);
}
