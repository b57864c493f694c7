/**
 * Activation of a live session: created → activating → active (or → failed), the engine
 * and the renderer started together and bounded by START_TIMEOUT_MS.
 */
import { type Span, SpanStatusCode } from "@opentelemetry/api";
import { inSpan } from "../metrics/tracing.ts";
import { PHOTO_OWN_BG } from "../avatars.ts";
import type { AppDeps } from "../deps.ts";
import type { EngineFactory } from "../ports/providers.ts";
import { EngineStartError } from "../ports/providers.ts";
import type { RenderBackend } from "../ports/render.ts";
import { moveSession, type SessionRecord } from "../sessions.ts";
import type { EndReason } from "../api/schemas.ts";
import { contain } from "./contain.ts";
import type { LiveSession } from "./live.ts";

/** What a hub starts sessions with: an engine factory per provider type and a renderer. */
export interface MediaHubOptions {
  engineFactoryFor: (type: SessionRecord["provider_type"]) => EngineFactory;
  render: RenderBackend;
}

/** What activation needs from the hub that holds the live session. */
export interface ActivationHost {
  readonly deps: AppDeps;
  readonly options: MediaHubOptions;
  readonly live: Map<string, LiveSession>;
  /** Stops `live` and moves its session to `failed` for `reason`. */
  fail(live: LiveSession, why: string, reason?: EndReason): Promise<void>;
}

/** created → activating → active (or → failed), bounded by START_TIMEOUT_MS. */
export function activate(
  host: ActivationHost,
  live: LiveSession,
  session: SessionRecord,
): Promise<void> {
  // The first socket's start as a span: engine connected and init sent as its events.
  return inSpan(
    "session.activate",
    {
      "session.id": session.session_id,
      "session.transport": session.transport,
    },
    (span) => start(host, live, session, span),
  );
}

async function start(
  host: ActivationHost,
  live: LiveSession,
  session: SessionRecord,
  span: Span,
): Promise<void> {
  const id = session.session_id;
  const deps = host.deps;
  if (session.status !== "created") {
    // Active or activating without a live object here: this process lost it (restart).
    await host.fail(live, "live media state was lost", "instance_lost");
    return;
  }
  if (session.transport === "webrtc_sfu" && !live.sfu) {
    await host.fail(live, "the session's SFU mountpoint is not held here");
    return;
  }
  const moved = await moveSession(deps, id, {
    from: ["created"],
    to: "activating",
  }).catch(
    () => null,
  );
  if (!moved?.ok) {
    host.live.delete(id);
    live.sendError("invalid_session", true);
    live.finish(moved?.session?.status ?? "failed");
    return;
  }
  live.sendState("activating");
  const credentials = deps.vault.use(id);
  if (!credentials) {
    await host.fail(live, "provider credentials are not available");
    return;
  }
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), deps.config.startTimeoutMs);
  let markReady!: () => void;
  const ready = new Promise<void>((r) => markReady = r);
  const initSent = new Promise<void>((r) =>
    live.onInitSent = () => (span.addEvent("media.init_sent"), r())
  );
  const aborted = new Promise<never>((_, reject) =>
    ac.signal.addEventListener(
      "abort",
      () => reject(new EngineStartError("timeout", "start timed out")),
    )
  );
  // Handled here and below: a start timeout must never surface as an unhandled
  // rejection (that would end the process).
  aborted.catch(() => {});
  const t0 = deps.now();
  const connected = (result: "ok" | "error") => {
    span.addEvent(`engine.${result === "ok" ? "connected" : "failed"}`);
    deps.metrics.engineConnect.observe(
      { provider: session.provider_type, result },
      (deps.now() - t0) / 1000,
    );
  };
  const starting = Promise.allSettled([
    host.options.engineFactoryFor(session.provider_type)({
      sessionId: id,
      credentials,
      events: live.engineEvents(() => markReady()),
      signal: ac.signal,
    }).then((engine) => (connected("ok"), engine), (err) => {
      connected("error");
      throw err;
    }),
    // The avatar streams as soon as the renderer is up, without waiting for the
    // engine: the idle avatar's first frames reach the socket while it connects.
    host.options.render.open({
      sessionId: id,
      tenantId: session.tenant_id,
      avatarId: session.avatar_id,
      bgId: session.bg_id === PHOTO_OWN_BG ? "" : session.bg_id,
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
    if (active.ok) {
      live.sendState("active");
      deps.metrics.activation.observe(
        { transport: session.transport },
        (now - t0) / 1000,
      );
    }
  } catch (err) {
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: "activation failed",
    });
    deps.log.warn("session activation failed", {
      session_id: id,
      reason: err instanceof Error ? err.message : String(err),
    });
    await host.fail(
      live,
      err instanceof Error ? err.message : "activation failed",
    );
  } finally {
    clearTimeout(timer);
  }
}
