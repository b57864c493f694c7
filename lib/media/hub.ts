/**
 * The media hub of one instance: accepts browser sockets, activates sessions (engine +
 * renderer), and is the `SessionRuntime` the control plane ends sessions through — here,
 * or on the instance that holds the session, via KV requests it polls for.
 */
import type { AppDeps } from "../deps.ts";
import type { EngineFactory } from "../providers/port.ts";
import { EngineStartError } from "../providers/port.ts";
import type { RenderBackend } from "../render/port.ts";
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
import { SocketAdmission } from "./admission.ts";
import { contain, type FailureSource } from "./contain.ts";
import {
  answerEndRequest,
  type EndRequest,
  endRequestKey,
  HUB_POLL_MS,
  requestRemoteEnd,
} from "./end_requests.ts";
import { LiveSession } from "./live.ts";
import { sendJson } from "./downlink.ts";
import { type SfuLink, sfuLinkFor } from "../sfu/mod.ts";
import { presenceKey } from "./presence.ts";

export { HUB_POLL_MS };
/** Close code for a socket refused after the upgrade (ended, failed or unknown session). */
export const CLOSE_INVALID_SESSION = 4001;

export interface MediaHubOptions {
  engineFactoryFor: (type: SessionRecord["provider_type"]) => EngineFactory;
  render: RenderBackend;
}

function opened(ws: WebSocket): Promise<boolean> {
  if (ws.readyState === WebSocket.OPEN) return Promise.resolve(true);
  return new Promise((resolve) => {
    ws.addEventListener("open", () => resolve(true), { once: true });
    ws.addEventListener("close", () => resolve(false), { once: true });
  });
}

export class MediaHub implements SessionRuntime {
  readonly live = new Map<string, LiveSession>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private polling = false;
  private handlingEnd = new Set<string>();
  private readonly admission: SocketAdmission;

  constructor(readonly deps: AppDeps, readonly options: MediaHubOptions) {
    this.admission = new SocketAdmission(deps);
  }

  start(): void {
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
    if (!await opened(ws)) {
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
    if (session.transport === "webrtc_sfu") live.sfu = this.sfuLink(live);
    live.attach(ws, session.status);
    await this.markPresence(id, true);
    await this.activate(live, session);
  }

  /** The SFU side of a webrtc_sfu session (null: this process holds no mountpoint). */
  private sfuLink(live: LiveSession): SfuLink | null {
    return sfuLinkFor(this.deps, live.sessionId, {
      send: (ws, msg) => sendJson(ws, msg),
      onFlowing: () => live.sfuFlowing(),
      onViewerFailed: () => live.sendError("avatar_render_failed", false),
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

  /** created → activating → active (or → failed), bounded by START_TIMEOUT_MS. */
  private async activate(
    live: LiveSession,
    session: SessionRecord,
  ): Promise<void> {
    const id = session.session_id;
    const deps = this.deps;
    if (session.status !== "created") {
      // Active or activating without a live object here: this process lost it (restart).
      await this.fail(live, "live media state was lost", "instance_lost");
      return;
    }
    if (session.transport === "webrtc_sfu" && !live.sfu) {
      await this.fail(live, "the session's SFU mountpoint is not held here");
      return;
    }
    const moved = await moveSession(deps, id, {
      from: ["created"],
      to: "activating",
    }).catch(
      () => null,
    );
    if (!moved?.ok) {
      this.live.delete(id);
      live.sendError("invalid_session", true);
      live.finish(moved?.session?.status ?? "failed");
      return;
    }
    live.send({ type: "session.state", status: "activating" });
    const credentials = deps.vault.use(id);
    if (!credentials) {
      await this.fail(live, "provider credentials are not available");
      return;
    }
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), deps.config.startTimeoutMs);
    let markReady!: () => void;
    const ready = new Promise<void>((r) => markReady = r);
    const initSent = new Promise<void>((r) => live.onInitSent = r);
    const aborted = new Promise<never>((_, reject) =>
      ac.signal.addEventListener(
        "abort",
        () => reject(new EngineStartError("timeout", "start timed out")),
      )
    );
    // Handled here and below: a start timeout must never surface as an unhandled
    // rejection (that would end the process).
    aborted.catch(() => {});
    const starting = Promise.allSettled([
      this.options.engineFactoryFor(session.provider_type)({
        sessionId: id,
        credentials,
        events: live.engineEvents(() => markReady()),
        signal: ac.signal,
      }),
      // The avatar streams as soon as the renderer is up, without waiting for the
      // engine: the idle avatar's first frames reach the socket while it connects.
      this.options.render.open({
        sessionId: id,
        avatarId: session.avatar_id,
        bgId: session.bg_id,
        output: session.transport === "webrtc_sfu" ? "rtp" : "fmp4",
      }).then((render) => {
        if (!live.closed) live.startRendering(render);
        return render;
      }),
    ]);
    // Whatever starts after the session gave up (timeout, end) is stopped at once.
    void starting.then(
      contain(
        deps.log,
        "hub",
        "late start cleanup",
        () => {},
        ([engineR, renderR]) => {
          if (!live.closed) return;
          if (engineR.status === "fulfilled") engineR.value.close();
          if (renderR.status === "fulfilled") {
            return renderR.value.stop({ graceful: false, timeoutMs: 0 });
          }
        },
      ),
    );
    try {
      const [engineR, renderR] = await Promise.race([starting, aborted]);
      if (engineR.status === "fulfilled") live.engine = engineR.value;
      if (engineR.status === "rejected") throw engineR.reason;
      if (renderR.status === "rejected") throw renderR.reason;
      await Promise.race([Promise.all([ready, initSent]), aborted]);
      if (live.closed) return;
      const now = deps.now();
      const active = await moveSession(deps, id, {
        from: ["activating"],
        to: "active",
        patch: { started_at: now },
      });
      if (active.ok) live.send({ type: "session.state", status: "active" });
    } catch (err) {
      deps.log.warn("session activation failed", {
        session_id: id,
        reason: err instanceof Error ? err.message : String(err),
      });
      await this.fail(
        live,
        err instanceof Error ? err.message : "activation failed",
      );
    } finally {
      clearTimeout(timer);
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
            this.releaseSoon(id, session.status, session.end_reason);
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
