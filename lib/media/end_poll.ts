/**
 * The holder's end polling: every HUB_POLL_MS the hub looks in KV at the sessions this
 * instance holds something for, answers end requests other instances wrote for them
 * (./end_requests.ts) and releases what it holds for sessions ended elsewhere.
 */
import type { AppDeps } from "../deps.ts";
import { isTerminal, type SessionRecord } from "../sessions.ts";
import { kvTry } from "../kv/store.ts";
import type { EndReason } from "../api/schemas.ts";
import { contain } from "./contain.ts";
import {
  answerEndRequest,
  type EndRequest,
  endRequestKey,
} from "./end_requests.ts";
import type { LiveSession } from "./live.ts";

/** Polls KV for one hub's end requests and for its sessions ended elsewhere. */
export class EndPoller {
  private polling = false;
  private handlingEnd = new Set<string>();

  constructor(
    private readonly deps: AppDeps,
    private readonly live: Map<string, LiveSession>,
    /** Frees what this instance holds for a session that turned terminal (contained). */
    private readonly release: (
      id: string,
      status: string,
      reason?: EndReason,
    ) => void,
  ) {}

  /**
   * Holder side: answers end requests, and releases what this instance holds for
   * sessions ended elsewhere (live sockets, credentials, render slots — a `created`
   * session has the latter two without a socket).
   */
  async poll(): Promise<void> {
    if (this.polling) return;
    const ids = [
      ...new Set([
        ...this.live.keys(),
        ...this.deps.vault.ids(),
        ...this.deps.renderSlots.ids(),
      ]),
    ];
    if (ids.length === 0) return;
    this.polling = true;
    try {
      for (let i = 0; i < ids.length; i += 5) {
        const batch = ids.slice(i, i + 5);
        const keys = batch.flatMap((
          id,
        ) => [["sessions", id], endRequestKey(id)]);
        const entries = await kvTry(this.deps.kv.getMany(keys as Deno.KvKey[]));
        batch.forEach((id, j) => {
          const session = entries[2 * j].value as SessionRecord | null;
          const request = entries[2 * j + 1].value as EndRequest | null;
          // A missing record is a create still committing, never a finished session
          // (terminal records are kept for 7 days).
          if (session && isTerminal(session.status)) {
            this.release(id, session.status, session.end_reason);
          } else if (request && !this.handlingEnd.has(id)) {
            contain(
              this.deps.log,
              "hub",
              "end request",
              () => {},
              () => this.answerEndRequest(id, request),
            )();
          }
        });
      }
    } catch (err) {
      this.deps.log.warn("media hub poll failed", { err });
    } finally {
      this.polling = false;
    }
  }

  private async answerEndRequest(
    id: string,
    request: EndRequest,
  ): Promise<void> {
    const live = this.live.get(id);
    if (!live) return;
    this.handlingEnd.add(id);
    try {
      live.sendState("ending");
      await answerEndRequest(this.deps, id, request, live);
    } finally {
      this.handlingEnd.delete(id);
    }
  }
}
