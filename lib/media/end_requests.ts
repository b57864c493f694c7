/**
 * Ends across instances: an end taken by an instance that does not hold the session is
 * written to KV as a request; the holder's hub polls for it, tears the live side down
 * and writes the result back, which the requester polls for (DECISIONS 0: watch and
 * queues alone do not reach another process in time).
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";
import type { EndLiveOptions, EndLiveResult } from "../runtime.ts";
import type { LiveSession } from "./live.ts";

/** How often the holder looks for end requests and for its sessions ended elsewhere. */
export const HUB_POLL_MS = 250;

export const endRequestKey = (id: string) => ["end_requests", id] as const;
export const endResultKey = (id: string) => ["end_results", id] as const;

export interface EndRequest {
  force: boolean;
  timeout_ms: number;
  at: number;
}

/** Asks the holder of `id` to end its live side; resolves with its result or a warning. */
export async function requestRemoteEnd(
  deps: AppDeps,
  id: string,
  options: EndLiveOptions,
): Promise<EndLiveResult> {
  const kv = deps.kv;
  const request: EndRequest = {
    force: options.force,
    timeout_ms: options.timeoutMs,
    at: deps.now(),
  };
  await kvTry(
    kv.set(endRequestKey(id), request, {
      expireIn: options.timeoutMs + 60_000,
    }),
  );
  const deadline = performance.now() + options.timeoutMs + 2 * HUB_POLL_MS +
    500;
  while (performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    const res = await kvTry(kv.get<EndLiveResult>(endResultKey(id)));
    if (res.value) {
      await kvTry(kv.delete(endResultKey(id))).catch(() => undefined);
      return res.value;
    }
  }
  await kvTry(kv.delete(endRequestKey(id))).catch(() => undefined);
  return {
    warning: `the instance holding the live media did not answer within ${
      Math.round(options.timeoutMs / 1000)
    } s`,
    chunksRendered: 0,
  };
}

/** Holder side: tears `live` down as `request` asks and writes the result for the requester. */
export async function answerEndRequest(
  deps: AppDeps,
  id: string,
  request: EndRequest,
  live: LiveSession,
): Promise<void> {
  try {
    await kvTry(deps.kv.delete(endRequestKey(id)));
    const problems = await live.teardown(request.force, request.timeout_ms);
    const result: EndLiveResult = {
      warning: problems.length ? problems.join("; ") : undefined,
      chunksRendered: live.stats.segmentsSent,
    };
    if (result.warning === undefined) delete result.warning;
    await kvTry(deps.kv.set(endResultKey(id), result, { expireIn: 60_000 }));
  } catch (err) {
    deps.log.error("could not answer end request", { session_id: id, err });
  }
}
