/**
 * Guards around the KV store: any failure or stall of the store becomes the retryable
 * 503 `AVTR_SESSION_STATE_UNAVAILABLE`, never a hang and never a 500 with a stack.
 */
import { ApiError } from "./errors.ts";

/** How long one store operation may take before the request gives up on it. */
export const KV_TIMEOUT_MS = 5000;

/**
 * Awaits a KV operation. Rejections that are not already `ApiError`s, and operations
 * slower than `timeoutMs`, become `AVTR_SESSION_STATE_UNAVAILABLE` (the cause is kept for
 * the log, never rendered).
 */
export async function kvTry<T>(
  op: Promise<T> | (() => Promise<T>),
  timeoutMs = KV_TIMEOUT_MS,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const p = typeof op === "function" ? op() : op;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`KV operation exceeded ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    return await Promise.race([p, timeout]);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError(
      "AVTR_SESSION_STATE_UNAVAILABLE",
      "Session state is temporarily unavailable",
      {
        cause: err,
      },
    );
  } finally {
    clearTimeout(timer);
  }
}

/** Opens the KV store named by `path` (`:memory:`, a file, a KV Connect URL, or the default). */
export async function openKv(path: string | undefined): Promise<Deno.Kv> {
  if (path && path !== ":memory:" && !/^[a-z]+:\/\//i.test(path)) {
    const dir = path.replace(/\/[^/]*$/, "");
    if (dir && dir !== path) await Deno.mkdir(dir, { recursive: true });
  }
  return await Deno.openKv(path);
}
