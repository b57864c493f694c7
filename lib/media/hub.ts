/**
 * The media hub of one instance: accepts browser sockets, activates sessions (engine +
 * renderer, ./activation.ts), and is the `SessionRuntime` the control plane ends sessions
 * through — here, or on the instance that holds the session, via KV requests it polls
 * for (./end_poll.ts).
 */
import type { AppDeps } from "../deps.ts";
import type {
  EndLiveOptions,
  EndLiveResult,
  SessionRuntime,
} from "../runtime.ts";
import {
  endWithWarning,
  isTerminal,
  moveSession,
  readSession,
  type SessionRecord,
} from "../sessions.ts";
import { kvTry } from "../kv/store.ts";
import type { EndReason } from "../api/schemas.ts";
import { activate, type MediaHubOptions } from "./activation.ts";
import { SocketAdmission } from "./admission.ts";
import { contain, type FailureSource, socketOpened } from "./contain.ts";
import { HUB_POLL_MS, requestRemoteEnd } from "./end_requests.ts";
import { EndPoller } from "./end_poll.ts";
import { LiveSession } from "./live.ts";
import { avatarKind } from "../sessions/metrics.ts";
import { alphaOf } from "../avatars.ts";
import { sendJson } from "./downlink.ts";
import { endedMessage } from "./protocol.ts";
import { type SfuLink, sfuLinkFor } from "./sfu_signalling.ts";
import { presenceKey } from "./presence.ts";

/** The statuses a live session is in (`avatar_live_sessions`). */
const LIVE_STATUSES = ["activating", "active", "ending"] as const;

export { HUB_POLL_MS, type MediaHubOptions };
/** Close code for a socket refused after the upgrade (ended, failed or unknown session). */
export const CLOSE_INVALID_SESSION = 4001;

export class MediaHub implements SessionRuntime {
  readonly live = new Map<string, LiveSession>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly admission: SocketAdmission;
  private readonly ends: EndPoller;

  constructor(readonly deps: AppDeps, readonly options: MediaHubOptions) {
    this.admission = new SocketAdmission(deps);
    this.ends = new EndPoller(
      deps,
      this.live,
      (id, status, reason) => this.releaseSoon(id, status, reason),
    );
  }

  start(): void {
    this.deps.metrics.sample(() => {
      let sockets = 0;
      const decoders = new Map<string, number>();
      const m = this.deps.metrics;
      // Every combination is exposed, at 0 when none: a panel shows 0, not nothing.
      for (const status of LIVE_STATUSES) {
        for (const transport of ["websocket_fmp4", "webrtc_sfu"]) {
          for (const avatar_kind of ["builtin", "photo"]) {
            m.liveSessions.set({ status, transport, avatar_kind }, 0);
          }
        }
      }
      for (const l of this.live.values()) {
        if (l.socket) sockets++;
        const d = l.viewer.freshDecoder();
        if (d) decoders.set(d, (decoders.get(d) ?? 0) + 1);
        m.liveSessions.inc({
          status: l.lastState === "active" || l.lastState === "ending"
            ? l.lastState
            : "activating",
          transport: l.sfu ? "webrtc_sfu" : "websocket_fmp4",
          avatar_kind: l.avatarKind,
        });
      }
      m.mediaSockets.set(sockets);
      m.viewers.reset();
      for (const [decoder, n] of decoders) m.viewers.set({ decoder }, n);
    });
    this.deps.sessionHooks.afterCommit.push((_before, after) => {
      const rec = after as SessionRecord;
      if (isTerminal(rec.status)) {
        this.releaseSoon(rec.session_id, rec.status, rec.end_reason);
      } else if (rec.status === "ending") {
        this.live.get(rec.session_id)?.sendState("ending");
      }
    });
    this.timer = setInterval(
      contain(
        this.deps.log,
        "hub",
        "media hub poll",
        () => {},
        () => this.poll(),
      ),
      HUB_POLL_MS,
    );
  }

  /** `release`, contained: a failure is logged, never an unhandled rejection. */
  private releaseSoon(id: string, status: string, reason?: EndReason): void {
    contain(
      this.deps.log,
      "hub",
      "release of a live session",
      () => {},
      () => this.release(id, status, reason),
    )();
  }

  /** Checks, before the upgrade, that a socket for `session` may open (./admission.ts). */
  admitSocket(session: SessionRecord): void {
    this.admission.admit(session, this.live.has(session.session_id));
  }

  /**
   * A socket admitted by `admitSocket` that never opened (the upgrade failed, or the
   * client went away first): the render slot it took goes back and the session stays
   * `created`, so aborted upgrades cannot hold render capacity.
   */
  notOpened(session: SessionRecord): void {
    const id = session.session_id;
    if (session.status === "created" && !this.live.has(id)) {
      this.deps.renderSlots.release(id);
    }
  }

  /** `accept`, contained: whatever throws closes this socket (1011) and fails nothing else. */
  acceptSocket(ws: WebSocket, session: SessionRecord): void {
    contain(
      this.deps.log,
      "hub",
      "media socket accept",
      () => {
        try {
          ws.close(1011, "internal error");
        } catch { /* already closing */ }
        const live = this.live.get(session.session_id);
        if (live && live.socket === ws) {
          void this.liveFailed(
            session.session_id,
            "internal error",
            "hub",
            "instance_lost",
          );
        }
      },
      () => this.accept(ws, session),
    )();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    const all = [...this.live.values()];
    this.live.clear();
    await Promise.all(all.map(async (live) => {
      await live.abort();
      live.goAway();
    }));
  }

  /** Takes a freshly upgraded browser socket for `session`. */
  async accept(ws: WebSocket, session: SessionRecord): Promise<void> {
    const id = session.session_id;
    if (!await socketOpened(ws)) {
      this.notOpened(session);
      return;
    }
    if (isTerminal(session.status) || session.owner !== this.deps.instanceId) {
      // Only the instance holding the credentials can run the session (docs/operations.md).
      if (
        session.owner !== this.deps.instanceId && !isTerminal(session.status)
      ) {
        this.deps.log.warn(
          "media socket reached an instance that does not hold the session",
          {
            session_id: id,
          },
        );
      }
      ws.send(
        JSON.stringify({ type: "error", code: "invalid_session", fatal: true }),
      );
      // An ended session: how it ended, as its own socket was told (a page that
      // redialled as it ended would otherwise never learn why).
      if (isTerminal(session.status)) {
        ws.send(
          JSON.stringify(endedMessage(session.status, session.end_reason)),
        );
      }
      ws.close(CLOSE_INVALID_SESSION, "invalid session");
      return;
    }
    let live = this.live.get(id);
    if (live) {
      live.attach(ws, session.status);
      await this.markPresence(id, true);
      return;
    }
    live = new LiveSession(this.deps, id);
    live.alpha = alphaOf(session.bg_id);
    live.avatarKind = avatarKind(session.avatar_id);
    this.live.set(id, live);
    live.onDetached = () => void this.markPresence(id, false);
    live.onFailed = contain(
      this.deps.log,
      "hub",
      "live session failure",
      () => {},
      (why: string, source: FailureSource, reason: EndReason) =>
        this.liveFailed(id, why, source, reason),
    );
    if (session.transport === "webrtc_sfu") {
      live.sfu = this.sfuLink(live);
      live.fmp4Fallback = session.fmp4_fallback === true;
    }
    live.attach(ws, session.status);
    await this.markPresence(id, true);
    await activate(
      {
        deps: this.deps,
        options: this.options,
        live: this.live,
        fail: (l, why, reason) => this.fail(l, why, reason),
      },
      live,
      session,
    );
  }

  /** The SFU side of a webrtc_sfu session (null: this process holds no mountpoint). */
  private sfuLink(live: LiveSession): SfuLink | null {
    return sfuLinkFor(this.deps, live.sessionId, {
      // A transparent avatar's offer says its video is stacked alpha (DECISIONS 6).
      send: (ws, msg) =>
        sendJson(
          ws,
          msg.type === "webrtc.offer" && live.alpha
            ? { ...msg, alpha: live.alpha }
            : msg,
        ),
      onFlowing: () => live.sfuFlowing(),
      onViewerFailed: () => live.sendError("avatar_render_failed", false),
      // The SFU restarted or stayed unreachable: the avatar cannot be shown again.
      onLost: (why) => live.onFailed?.(why, "render", "render_failed"),
    });
  }

  private async markPresence(id: string, attached: boolean): Promise<void> {
    try {
      await kvTry(this.deps.kv.set(presenceKey(id), {
        attached,
        since: this.deps.now(),
        instance: this.deps.instanceId,
      }, { expireIn: 8 * 24 * 3600 * 1000 }));
    } catch (err) {
      this.deps.log.warn("could not record media presence", {
        session_id: id,
        err,
      });
    }
  }

  private async fail(
    live: LiveSession,
    why: string,
    reason: EndReason = "start_failed",
  ): Promise<void> {
    await live.abort();
    const moved = await moveSession(this.deps, live.sessionId, {
      from: ["created", "activating"],
      to: "failed",
      reason,
    }).catch(() => null);
    this.deps.log.info("session failed", {
      session_id: live.sessionId,
      reason: why,
      end_reason: reason,
    });
    if (!moved?.ok) {
      await this.release(
        live.sessionId,
        moved?.session?.status ?? "failed",
        moved?.session?.end_reason,
      );
    }
  }

  /**
   * Something ended a live session (the engine, the renderer, a contained throw):
   * before `active` it failed to start; once `active` it ends for `reason`, with `why`
   * as the warning unless the engine ended the conversation normally.
   */
  private async liveFailed(
    id: string,
    why: string,
    source: FailureSource,
    reason: EndReason,
  ): Promise<void> {
    const live = this.live.get(id);
    if (!live || live.closed) return;
    this.deps.log.warn("live session failed", {
      session_id: id,
      source,
      reason: why,
      end_reason: reason,
    });
    const session = await readSession(this.deps, id).catch(() => null);
    if (session?.status === "activating") {
      await this.fail(live, why);
      return;
    }
    const warning = reason === "provider_ended" ? undefined : why;
    await endWithWarning(this.deps, id, reason, warning).catch((err) =>
      this.deps.log.error("could not end session after a live failure", {
        session_id: id,
        err,
      })
    );
  }

  /**
   * Frees everything this instance holds for a session that turned terminal, here or
   * on another instance: its credentials, its render slot and its live side.
   */
  private async release(
    id: string,
    status: string,
    reason?: EndReason,
  ): Promise<void> {
    this.deps.vault.zero(id);
    this.deps.renderSlots.release(id);
    this.admission.forget(id);
    const live = this.live.get(id);
    if (!live) return;
    this.live.delete(id);
    this.deps.log.info("live session released", {
      session_id: id,
      status,
      ...live.stats,
      user_audio: live.engine?.userAudioStats?.(),
    });
    if (!live.closed) await live.abort();
    if (status === "failed") {
      live.sendError("invalid_session", true);
      live.finish("failed", reason);
    } else {
      live.finish(status, reason);
    }
    await kvTry(this.deps.kv.delete(presenceKey(id))).catch(() => undefined);
  }

  /** SessionRuntime: tears down the live side here, or asks the holder through KV. */
  async endLive(id: string, options: EndLiveOptions): Promise<EndLiveResult> {
    const live = this.live.get(id);
    if (live) {
      const problems = await live.teardown(options.force, options.timeoutMs);
      return {
        warning: problems.length ? problems.join("; ") : undefined,
        chunksRendered: live.stats.segmentsSent,
      };
    }
    const session = await readSession(this.deps, id);
    if (!session || session.owner === this.deps.instanceId) {
      return { chunksRendered: 0 };
    }
    return await requestRemoteEnd(this.deps, id, options);
  }

  /**
   * Holder side: answers end requests, and releases what this instance holds for
   * sessions ended elsewhere (./end_poll.ts).
   */
  poll(): Promise<void> {
    return this.ends.poll();
  }
}
