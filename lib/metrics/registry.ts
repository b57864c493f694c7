/**
 * This instance's Prometheus metrics (DECISIONS 10), served at `/metrics`
 * (routes/metrics.ts). One registry per app: every instance, control plane and media
 * node alike, exposes its own. Built on `prom-client` (npm), the client library most
 * Node services use: its text format, label handling and histogram buckets are well
 * tested, and it needs nothing from the runtime beyond what Deno's Node compatibility
 * gives. Label sets are bounded: a route's template (never its path), a method, a
 * status, a result; no session id, key id, token, URL or address.
 */
import client from "prom-client";

/** Something that sets gauges from live state just before they are read. */
export type Sampler = () => void;

/** The instruments of one app instance. */
export class AppMetrics {
  readonly registry = new client.Registry();
  readonly #samplers: Sampler[] = [];

  /** Every HTTP request answered, by route template, method and status. */
  readonly httpRequests = new client.Counter({
    name: "avatar_http_requests_total",
    help: "HTTP requests answered, by route template, method and status.",
    labelNames: ["route", "method", "status"] as const,
    registers: [this.registry],
  });
  /** How long answering took, by route template and method (seconds). */
  readonly httpDuration = new client.Histogram({
    name: "avatar_http_request_duration_seconds",
    help: "Time to answer an HTTP request, by route template and method.",
    labelNames: ["route", "method"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  /**
   * Sessions this instance holds live (their media side is here), by status
   * (`activating`, `active`, `ending`), transport and avatar kind.
   */
  readonly liveSessions = new client.Gauge({
    name: "avatar_live_sessions",
    help:
      "Sessions whose live side (engine, renderer, sockets) this instance holds, by status, transport and avatar kind.",
    labelNames: ["status", "transport", "avatar_kind"] as const,
    registers: [this.registry],
  });
  /** Media sockets open on the sessions held here. */
  readonly mediaSockets = new client.Gauge({
    name: "avatar_media_sockets",
    help: "Browser media sockets open on the sessions this instance holds.",
    registers: [this.registry],
  });
  /** Render slots (RENDER_MAX_SESSIONS), used and free. */
  readonly renderSlots = new client.Gauge({
    name: "avatar_render_slots",
    help:
      "Render slots of this instance, by state (used: leased or rendering).",
    labelNames: ["state"] as const,
    registers: [this.registry],
  });
  /** Photo avatar preparations, by result (`ok` or the refusal's cause). */
  readonly photoPreparations = new client.Counter({
    name: "avatar_photo_preparations_total",
    help:
      "Portraits prepared into photo avatars, by result: ok or the refusal's cause.",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });
  /**
   * Sessions created and ended (their record committed by this instance), by transport,
   * avatar kind and provider; ends by their reason and final status too (which engine
   * is failing). `tenant` is a label only when
   * the operator asked for it (`METRICS_TENANT_LABEL`); otherwise it is "".
   */
  readonly sessionsCreated = new client.Counter({
    name: "avatar_sessions_created_total",
    help:
      'Sessions created, by transport, avatar kind (builtin or photo), provider type and tenant ("" unless METRICS_TENANT_LABEL).',
    labelNames: ["transport", "avatar_kind", "provider", "tenant"] as const,
    registers: [this.registry],
  });
  readonly sessionsEnded = new client.Counter({
    name: "avatar_sessions_ended_total",
    help:
      'Sessions ended, by end reason, final status, transport, avatar kind, provider type and tenant ("" unless METRICS_TENANT_LABEL).',
    labelNames: [
      "reason",
      "status",
      "transport",
      "avatar_kind",
      "provider",
      "tenant",
    ] as const,
    registers: [this.registry],
  });
  /** Seconds sessions were active, by transport and avatar kind. */
  readonly sessionDuration = new client.Histogram({
    name: "avatar_session_duration_seconds",
    help: "Seconds an ended session was active, by transport and avatar kind.",
    labelNames: ["transport", "avatar_kind"] as const,
    buckets: [5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600],
    registers: [this.registry],
  });
  /**
   * Webhook delivery attempts this instance made, by event type and what followed:
   * `delivered`, `retry` (another attempt scheduled) or `dead` (a dead letter).
   */
  readonly webhookAttempts = new client.Counter({
    name: "avatar_webhook_attempts_total",
    help:
      "Webhook delivery attempts, by event type and outcome: delivered, retry or dead.",
    labelNames: ["type", "outcome"] as const,
    registers: [this.registry],
  });
  /** How long a receiver took to answer an attempt (or to fail it). */
  readonly webhookLatency = new client.Histogram({
    name: "avatar_webhook_attempt_duration_seconds",
    help: "Time a webhook receiver took to answer one delivery attempt.",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  /**
   * Requests and sockets refused by a limit, by kind: `principal` (a key's or a token's
   * window), `address` (an unauthenticated client's), `reconnect` (a session's socket
   * takeovers) and `render_capacity` (no render slot for a socket).
   */
  readonly refused = new client.Counter({
    name: "avatar_rate_limited_total",
    help:
      "Requests and media sockets refused by a limit, by kind: principal, address, reconnect, render_capacity.",
    labelNames: ["kind"] as const,
    registers: [this.registry],
  });
  /**
   * Agent audio → the fMP4 fragment that carries it, per push, on this instance's
   * built-in renderer: what the viewer waits on beyond the network.
   */
  readonly renderLatency = new client.Histogram({
    name: "avatar_render_audio_to_fragment_seconds",
    help:
      "Time from an agent-audio push to the fMP4 fragment carrying it (built-in renderer).",
    buckets: [0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2],
    registers: [this.registry],
  });
  /**
   * Frames the built-in renderer streamed, by picture: painted for that frame, or the
   * last one again (a catch-up frame, or a painter that fell behind).
   */
  readonly renderFrames = new client.Counter({
    name: "avatar_render_frames_total",
    help:
      "Frames streamed by the built-in renderer, by picture: painted, or repeated (the last again: catch-up, or a painter behind).",
    labelNames: ["picture"] as const,
    registers: [this.registry],
  });
  /** A session's engine connection, from the socket's start to connected or failed. */
  readonly engineConnect = new client.Histogram({
    name: "avatar_engine_connect_seconds",
    help:
      "Time to connect a session's conversation engine, by provider type and result (ok or error).",
    labelNames: ["provider", "result"] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 15],
    registers: [this.registry],
  });
  /** A session's start: the first socket's activation until `active`. */
  readonly activation = new client.Histogram({
    name: "avatar_session_activation_seconds",
    help:
      "Time from a session's first media socket to active (engine connected, first fragment sent), by transport.",
    labelNames: ["transport"] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 15],
    registers: [this.registry],
  });
  /** fMP4 streams restarted on their socket after the renderer failed (an encoder died or fell behind). */
  readonly streamRestarts = new client.Counter({
    name: "avatar_stream_restarts_total",
    help:
      "fMP4 streams restarted on the same socket after a render failure (encoder died or fell behind).",
    registers: [this.registry],
  });
  /** fMP4 segments not sent to a browser, by why. */
  readonly segmentsDropped = new client.Counter({
    name: "avatar_segments_dropped_total",
    help:
      "fMP4 segments not sent to a browser: slow (its socket's queue full) or keyframe (waiting for one after a drop).",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  /** Media sockets that took a session over from an older socket of it. */
  readonly takeovers = new client.Counter({
    name: "avatar_media_takeovers_total",
    help: "Media sockets that took a session over from its older socket.",
    registers: [this.registry],
  });
  /** Bytes this instance relayed for sessions another instance holds, by direction. */
  readonly relayBytes = new client.Counter({
    name: "avatar_relay_bytes_total",
    help:
      "Bytes relayed between browsers and the instance holding their session, by direction (to_holder, to_browser; text frames counted at 3 bytes a character at most).",
    labelNames: ["direction"] as const,
    registers: [this.registry],
  });
  /** Whether this instance's SFU (Janus) answered its last probe (absent: never probed). */
  readonly sfuUp = new client.Gauge({
    name: "avatar_sfu_up",
    help:
      "1 when this instance's SFU (Janus) answered its last health probe, 0 when it did not.",
    registers: [this.registry],
  });
  /** Mountpoints this instance holds on its SFU. */
  readonly sfuMountpoints = new client.Gauge({
    name: "avatar_sfu_mountpoints",
    help:
      "Mountpoints this instance holds on its SFU (one per webrtc_sfu session).",
    registers: [this.registry],
  });
  /** What viewers experience, from their browser clients' `client.stats` (DECISIONS 6). */
  readonly viewerFirstFrame = new client.Histogram({
    name: "avatar_viewer_first_frame_seconds",
    help:
      "Socket open → first frame shown, as viewers' browser clients report it, by decoder.",
    labelNames: ["decoder"] as const,
    buckets: [0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10],
    registers: [this.registry],
  });
  readonly viewerGlassToGlass = new client.Histogram({
    name: "avatar_viewer_glass_to_glass_seconds",
    help:
      "Viewers' browser clients' estimate of glass-to-glass latency, per report, by decoder.",
    labelNames: ["decoder"] as const,
    buckets: [0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2],
    registers: [this.registry],
  });
  readonly viewerStalls = new client.Counter({
    name: "avatar_viewer_stalls_total",
    help: "Playback stalls viewers' browser clients reported, by decoder.",
    labelNames: ["decoder"] as const,
    registers: [this.registry],
  });
  readonly viewerUnderruns = new client.Counter({
    name: "avatar_viewer_underruns_total",
    help: "Audio underruns viewers' browser clients reported, by decoder.",
    labelNames: ["decoder"] as const,
    registers: [this.registry],
  });
  /** Sessions held here whose viewer reported in the last 15 s, by decoder. */
  readonly viewers = new client.Gauge({
    name: "avatar_viewers",
    help:
      "Sessions held here whose browser client reported client.stats in the last 15 s, by decoder.",
    labelNames: ["decoder"] as const,
    registers: [this.registry],
  });
  /** KV operations, by kind, the first part of their key and result (lib/kv/metered.ts). */
  readonly kvOps = new client.Counter({
    name: "avatar_kv_operations_total",
    help:
      "KV operations by kind (get, get_many, set, delete, list, commit), the first part of their key, and result (ok, error, conflict).",
    labelNames: ["op", "prefix", "result"] as const,
    registers: [this.registry],
  });
  readonly kvLatency = new client.Histogram({
    name: "avatar_kv_operation_duration_seconds",
    help: "Time a KV operation took, by kind.",
    labelNames: ["op"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  /** The process's resident memory and V8 heap (bytes). */
  readonly memory = new client.Gauge({
    name: "avatar_process_memory_bytes",
    help:
      "This process's memory, by kind: rss, heap_used, heap_total, external.",
    labelNames: ["kind"] as const,
    registers: [this.registry],
  });

  constructor() {
    this.sample(() => {
      const m = Deno.memoryUsage();
      this.memory.set({ kind: "rss" }, m.rss);
      this.memory.set({ kind: "heap_used" }, m.heapUsed);
      this.memory.set({ kind: "heap_total" }, m.heapTotal);
      this.memory.set({ kind: "external" }, m.external);
    });
  }

  /** Adds a sampler run before each exposition (the owner of some live state). */
  sample(fn: Sampler): void {
    this.#samplers.push(fn);
  }

  /**
   * An answered request, counted and timed. On the REST hot path: each label set's
   * children are looked up once, then reached by one map read (prom-client hashes the
   * labels on every call otherwise, a tenth of a status read's cost).
   */
  request(
    route: string,
    method: string,
    status: number,
    seconds: number,
  ): void {
    const m = METHODS.has(method) ? method : "OTHER";
    const key = `${status} ${m} ${route}`;
    let c = this.#requestChildren.get(key);
    if (!c) {
      c = {
        count: this.httpRequests.labels(route, m, String(status)),
        time: this.httpDuration.labels(route, m),
      };
      this.#requestChildren.set(key, c);
    }
    c.count.inc();
    c.time.observe(seconds);
  }

  readonly #requestChildren = new Map<
    string,
    {
      count: client.Counter.Internal;
      time: client.Histogram.Internal<"route" | "method">;
    }
  >();

  /** One KV operation (lib/kv/metered.ts's `KvMeter`): label children kept. */
  kvOp(
    op: string,
    prefix: string,
    result: string,
    seconds: number | null,
  ): void {
    const key = `${op} ${prefix} ${result}`;
    let c = this.#kvChildren.get(key);
    if (!c) {
      c = {
        count: this.kvOps.labels(op, prefix, result),
        time: this.kvLatency.labels(op),
      };
      this.#kvChildren.set(key, c);
    }
    c.count.inc();
    if (seconds !== null) c.time.observe(seconds);
  }

  readonly #kvChildren = new Map<
    string,
    {
      count: client.Counter.Internal;
      time: client.Histogram.Internal<"op">;
    }
  >();

  /** The exposition (text format 0.0.4) and its content type. */
  async expose(): Promise<{ body: string; contentType: string }> {
    for (const fn of this.#samplers) fn();
    return {
      body: await this.registry.metrics(),
      contentType: this.registry.contentType,
    };
  }
}

/** Methods counted by name; anything else is `OTHER` (a client may send any token). */
const METHODS = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
]);
