/**
 * The media nodes a control plane can hand sessions to: the instance records
 * (lib/media/presence.ts) of role `media` with a fresh heartbeat and a URL, not
 * draining, most free render slots first. A node that stops heartbeating drops out of
 * the list by itself. Also every instance, live or not, as the operator's console shows
 * them.
 */
import type { AppDeps } from "../deps.ts";
import { type Administrator, isOperator } from "../principal.ts";
import { kvTry } from "../kv/store.ts";
import {
  heartbeatFresh,
  instanceKey,
  type InstanceRecord,
  instanceUrlAllowed,
} from "../media/presence.ts";
import type { ServiceRole } from "../config_nodes.ts";

export interface MediaNode {
  id: string;
  /** Origin at which the control plane calls the node and relays media sockets. */
  url: string;
  /** Free render slots at the node's last heartbeat. */
  free: number;
  /** Whether it has a realtime SFU, so can take `webrtc_sfu` sessions. */
  sfu: boolean;
}

/** Every instance record, as the console and the control plane read them. */
async function readInstances(deps: AppDeps): Promise<InstanceView[]> {
  const now = deps.now();
  const out: InstanceView[] = [];
  const iter = deps.kv.list<InstanceRecord>({ prefix: ["instances"] });
  await kvTry((async () => {
    for await (const e of iter) {
      out.push(instanceView(deps, String(e.key[1]), e.value, now));
    }
  })());
  return out;
}

/**
 * The live media nodes, in the order to try them: most free slots first, ties in random
 * order (so concurrent creates spread), full nodes last (their count may be stale).
 */
export async function mediaNodes(deps: AppDeps): Promise<MediaNode[]> {
  const nodes: (MediaNode & { tie: number })[] = [];
  for (const v of await readInstances(deps)) {
    if (v.role !== "media" || !v.url || v.draining || !v.live) continue;
    if (!instanceUrlAllowed(deps, v.url)) {
      deps.log.warn("media node skipped: its URL is not https", { node: v.id });
      continue;
    }
    nodes.push({
      id: v.id,
      url: v.url,
      free: v.render?.free ?? 0,
      sfu: v.sfu,
      tie: Math.random(),
    });
  }
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

/** One instance record as the console shows it. */
export interface InstanceView {
  id: string;
  /** Records written before roles existed count as `all`. */
  role: ServiceRole;
  url?: string;
  started_at: number;
  heartbeat_at: number;
  /** Whether its heartbeat is fresh (younger than 3.5 heartbeats). */
  live: boolean;
  render?: { free: number; max: number };
  sfu: boolean;
  draining: boolean;
}

function instanceView(
  deps: AppDeps,
  id: string,
  rec: InstanceRecord,
  now: number,
): InstanceView {
  return {
    id,
    role: rec.role ?? "all",
    ...(rec.url ? { url: rec.url } : {}),
    started_at: rec.started_at,
    heartbeat_at: rec.heartbeat_at,
    live: heartbeatFresh(deps, rec, now),
    ...(rec.render ? { render: rec.render } : {}),
    sfu: rec.sfu === true,
    draining: rec.draining === true,
  };
}

/**
 * Every instance record, live ones first, then the most recently heard from. A stale
 * record stays listed until its `expireIn` (two stale periods) removes it, so the
 * operator sees a node that just died. Instance ids and URLs are infrastructure, not a
 * tenant's: anyone but the operator gets an empty list.
 */
export async function listInstances(
  deps: AppDeps,
  by: Administrator,
): Promise<InstanceView[]> {
  if (!isOperator(by)) return [];
  const out = await readInstances(deps);
  return out.sort((a, b) =>
    Number(b.live) - Number(a.live) || b.heartbeat_at - a.heartbeat_at ||
    (a.id < b.id ? -1 : 1)
  );
}

/**
 * The instance holding a session (its `owner`), for the operator: the owner's id and
 * its record, null when the record is gone (the instance stopped or has been silent for
 * long). Null for anyone else, who sees no infrastructure.
 */
export async function sessionHolder(
  deps: AppDeps,
  by: Administrator,
  owner: string,
): Promise<{ id: string; instance: InstanceView | null } | null> {
  if (!isOperator(by)) return null;
  const entry = await kvTry(deps.kv.get<InstanceRecord>(instanceKey(owner)));
  return {
    id: owner,
    instance: entry.value
      ? instanceView(deps, owner, entry.value, deps.now())
      : null,
  };
}
