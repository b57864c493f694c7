/**
 * Whether a media socket may open for a session this instance holds, answered before the
 * upgrade: reconnects and takeovers of a live session are rate-limited per session (a
 * token bucket: past it 429 `AVTR_RATE_LIMIT_EXCEEDED`), and a `created` session's socket
 * needs a render slot (DECISIONS 1: its lease becomes a hold, or a free slot is taken when
 * the lease lapsed; none free → 503 `AVTR_RENDER_CAPACITY`, the session stays `created`).
 */
import { ApiError } from "../errors.ts";
import type { AppDeps } from "../deps.ts";
import type { SessionRecord } from "../sessions.ts";
import { TokenBucket } from "./bucket.ts";

/**
 * Sockets that may reconnect to or take over one live session at once, and how many more
 * it may per minute.
 */
export const TAKEOVER_BURST = 5;
export const TAKEOVERS_PER_MINUTE = 10;

export class SocketAdmission {
  #takeovers = new Map<string, TokenBucket>();

  constructor(private readonly deps: AppDeps) {}

  /**
   * Throws the `ApiError` that refuses a socket for `session`, or takes what it needs:
   * a takeover token when `live` (the session has a live side here), else a render slot
   * for a `created` session.
   */
  admit(session: SessionRecord, live: boolean): void {
    const id = session.session_id;
    if (live) {
      let bucket = this.#takeovers.get(id);
      if (!bucket) {
        bucket = new TokenBucket(
          TAKEOVER_BURST,
          TAKEOVERS_PER_MINUTE / 60,
          this.deps.now,
        );
        this.#takeovers.set(id, bucket);
      }
      if (!bucket.take()) {
        this.deps.metrics.refused.inc({ kind: "reconnect" });
        throw new ApiError(
          "AVTR_RATE_LIMIT_EXCEEDED",
          "Too many reconnects to this session; wait before connecting again",
          { retryAfter: bucket.waitSeconds() },
        );
      }
      return;
    }
    if (
      session.status === "created" &&
      !this.deps.renderSlots.connect(
        id,
        session.tenant_id,
        session.render_slots ?? 1,
      )
    ) {
      this.deps.metrics.refused.inc({ kind: "render_capacity" });
      throw new ApiError(
        "AVTR_RENDER_CAPACITY",
        "No render capacity is free for this session right now",
        { retryAfter: this.deps.renderSlots.retryAfterS() },
      );
    }
  }

  /** Forgets a session that turned terminal. */
  forget(id: string): void {
    this.#takeovers.delete(id);
  }
}
