/**
 * Configuration from environment variables (DECISIONS 1). `loadConfig` is pure: it takes
 * the environment as a record so tests build configs without touching `Deno.env`.
 */

import { z } from "zod";
import { ConfigError } from "./config_error.ts";
import { type NodeConfig, nodeConfig } from "./config_nodes.ts";

const ICE_URL = /^(stuns?|turns?):[^\s]+$/;

export interface Config extends NodeConfig {
  port: number;
  /** Listen address (`HOST`): every interface by default. */
  host: string;
  /**
   * A path, `:memory:`, a KV Connect URL, or undefined for `Deno.openKv()`'s default
   * (only on Deno Deploy, where that is the managed store).
   */
  kvPath: string | undefined;
  adminApiKey: string | undefined;
  /**
   * Bearer token `/metrics` answers to (`METRICS_TOKEN`, DECISIONS 10); without it the
   * path is not served.
   */
  metricsToken: string | undefined;
  /**
   * Whether session metrics carry a `tenant` label (`METRICS_TENANT_LABEL`, DECISIONS
   * 10): the operator chooses that cardinality; off by default.
   */
  metricsTenantLabel: boolean;
  /** HMAC key bytes for tokens, or null when `TOKEN_SECRET` is set but unusable. */
  tokenSecret: Uint8Array | null;
  /** True when no `TOKEN_SECRET` was set and a per-process one was generated. */
  tokenSecretGenerated: boolean;
  rateLimitPerMinute: number;
  /** Deadline (ms) for reading a whole REST request body. */
  requestBodyTimeoutMs: number;
  maxConcurrentSessions: number;
  renderMaxSessions: number;
  /** Threads painting photo avatars (`PAINT_WORKERS`); 0 paints them on the event loop. */
  paintWorkers: number;
  /** Photo avatars a tenant may keep (`AVATAR_STORE_MAX_PER_TENANT`, DECISIONS 12). */
  avatarStoreMaxPerTenant: number;
  /** Seconds a render slot reserved at create waits for the session's media socket. */
  renderReservationS: number;
  startTimeoutMs: number;
  endCleanupTimeoutMs: number;
  sessionConnectTimeoutS: number;
  sessionIdleTimeoutS: number;
  sessionMaxDurationS: number;
  webhookSecret: string | undefined;
  /** Delays (ms) before each webhook retry; `WEBHOOK_RETRY_SCHEDULE_MS` overrides it. */
  webhookRetryScheduleMs: number[];
  /** Per-attempt webhook delivery timeout (ms). */
  webhookTimeoutMs: number;
  allowPrivateNetworkTargets: boolean;
  /** The realtime SFU of DECISIONS 11; null without `SFU_URL`. */
  sfu: {
    url: string;
    apiKey: string;
    apiSecret: string;
  } | null;
  /**
   * The ICE servers browsers get for `webrtc_sfu` sessions (`ICE_SERVERS`, `TURN_SECRET`),
   * read with or without `SFU_URL`: a control plane hands them out for its media nodes.
   */
  ice: {
    servers: IceServer[];
    /** coturn's `static-auth-secret`: `turn:` entries get time-limited credentials. */
    turnSecret: string | undefined;
  };
  idp: {
    issuer: string;
    /** The `aud` every token must name (`IDP_AUDIENCE`, required with `IDP_ISSUER`). */
    audience: string;
    jwksUrl: string | undefined;
    jwks: string | undefined;
    azpAllowlist: string[];
  } | null;
  /** Base of every error body's `doc_url` (DECISIONS 3; see `docsBase`). */
  docsBaseUrl: string;
  /** True when neither `DOCS_BASE_URL` nor an https `PUBLIC_URL` set `docsBaseUrl`. */
  docsBaseIsDefault: boolean;
  /** Public base URL of this instance, when known (used in printed hints). */
  publicUrl: string | undefined;
  /** Endpoints of the vendor providers: configuration, so tests point them at loopback. */
  providerEndpoints: {
    vendorARealtimeUrl: string;
    vendorBUrl: string;
    vendorCUrl: string;
    vendorCApiUrl: string;
  };
  /** Bench only (`RENDER_CLOCK_STAMP`): the built-in renderer stamps the wall clock into frames. */
  renderClockStamp: boolean;
  /** Remote render worker base URL; unset uses the built-in renderer in-process. */
  renderWorkerUrl: string | undefined;
  renderWorkerToken: string | undefined;
  /** Base URL at which other instances reach this one (`INSTANCE_URL`). */
  instanceUrl: string | undefined;
  /** Engine URL the console's Try it page proposes (`TRY_ENGINE_URL`). */
  tryEngineUrl: string | undefined;
}

export interface IceServer {
  urls: string | string[];
  username?: string;
  credential?: string;
}

export { ConfigError };

export const DEFAULT_DOCS_BASE_URL = "https://docs.avatar.example.com";

/**
 * The base of `doc_url` (DECISIONS 3): `DOCS_BASE_URL`; else `PUBLIC_URL` + `/docs`
 * when `PUBLIC_URL` is https (this service serves `/docs/errors/{code}`); else
 * `DEFAULT_DOCS_BASE_URL`.
 */
export function docsBase(
  env: Record<string, string | undefined>,
): { url: string; isDefault: boolean } {
  if (env.DOCS_BASE_URL) {
    if (!env.DOCS_BASE_URL.startsWith("https://")) {
      throw new ConfigError("DOCS_BASE_URL must be an https:// URL");
    }
    return { url: env.DOCS_BASE_URL, isDefault: false };
  }
  const pub = env.PUBLIC_URL ?? "";
  if (pub.startsWith("https://")) {
    return { url: `${pub.replace(/\/+$/, "")}/docs`, isDefault: false };
  }
  return { url: DEFAULT_DOCS_BASE_URL, isDefault: true };
}

function int(
  env: Record<string, string | undefined>,
  name: string,
  def: number,
  min = 0,
): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    throw new ConfigError(`${name} must be an integer >= ${min}`);
  }
  return n;
}

/** A comma-separated list of non-negative integers (milliseconds). */
function msList(
  env: Record<string, string | undefined>,
  name: string,
  def: number[],
): number[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return def;
  const out = raw.split(",").map((s) => Number(s.trim()));
  if (out.some((n) => !Number.isInteger(n) || n < 0)) {
    throw new ConfigError(
      `${name} must be a comma-separated list of integers >= 0`,
    );
  }
  return out;
}

function bool(env: Record<string, string | undefined>, name: string): boolean {
  const raw = (env[name] ?? "").toLowerCase();
  if (raw === "" || raw === "false" || raw === "0" || raw === "no") {
    return false;
  }
  if (raw === "true" || raw === "1" || raw === "yes") return true;
  throw new ConfigError(`${name} must be true or false`);
}

/** Default render slots: what two encoder processes per core sustain at 25 fps. */
export function defaultRenderSlots(
  cores = navigator.hardwareConcurrency ?? 2,
): number {
  return Math.max(1, cores * 2);
}

function instanceUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (!/^https?:\/\/[^/?#]+\/?$/.test(raw)) {
    throw new ConfigError(
      "INSTANCE_URL must be an http(s) origin such as http://10.0.0.5:8000",
    );
  }
  return raw.replace(/\/$/, "");
}

/** The KV file used when `KV_PATH` is unset; on Deno Deploy, the managed store. */
export const DEFAULT_KV_PATH = "./data/avatar.sqlite";

function defaultKvPath(
  env: Record<string, string | undefined>,
): string | undefined {
  return env.DENO_DEPLOYMENT_ID ? undefined : DEFAULT_KV_PATH;
}

const iceServersSchema = z.array(z.strictObject({
  urls: z.union([
    z.string().regex(ICE_URL),
    z.array(z.string().regex(ICE_URL)).min(1),
  ]),
  username: z.string().optional(),
  credential: z.string().optional(),
}));

/** `SFU_URL` and its companions (DECISIONS 11); null without `SFU_URL`. */
function sfuConfig(env: Record<string, string | undefined>): Config["sfu"] {
  if (!env.SFU_URL) return null;
  if (!/^https?:\/\/[^/?#]+(\/[^?#]*)?$/.test(env.SFU_URL)) {
    throw new ConfigError(
      "SFU_URL must be the SFU's http(s) API URL, e.g. http://127.0.0.1:8088/janus",
    );
  }
  if (!env.SFU_API_SECRET || !env.SFU_API_KEY) {
    throw new ConfigError(
      "SFU_URL needs SFU_API_SECRET (the Janus API token) and SFU_API_KEY (the streaming plugin's admin_key)",
    );
  }
  return {
    url: env.SFU_URL.replace(/\/+$/, ""),
    apiKey: env.SFU_API_KEY,
    apiSecret: env.SFU_API_SECRET,
  };
}

/** `ICE_SERVERS` and `TURN_SECRET`. */
function iceConfig(env: Record<string, string | undefined>): Config["ice"] {
  let servers: IceServer[] = [];
  if (env.ICE_SERVERS) {
    let raw: unknown;
    try {
      raw = JSON.parse(env.ICE_SERVERS);
    } catch {
      raw = undefined;
    }
    const parsed = iceServersSchema.safeParse(raw);
    if (!parsed.success) {
      throw new ConfigError(
        "ICE_SERVERS must be a JSON array of ICE servers ({urls, username?, credential?} with stun:, stuns:, turn: or turns: URLs)",
      );
    }
    servers = parsed.data;
  }
  return { servers, turnSecret: env.TURN_SECRET || undefined };
}

/** An `ADMIN_API_KEY` shorter than this refuses the start (DECISIONS 1). */
/**
 * `HOST`: an IPv4 or IPv6 address, or a host name (`localhost`); `0.0.0.0`, every
 * IPv4 interface, by default.
 */
export function listenHost(raw: string | undefined): string {
  const host = raw?.trim() ?? "";
  if (host === "") return "0.0.0.0";
  const ipv4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (ipv4) {
    if (ipv4.slice(1).every((p) => Number(p) <= 255)) return host;
  } else if (host.includes(":")) {
    if (/^[0-9a-fA-F:.]+$/.test(host) && URL.canParse(`http://[${host}]/`)) {
      return host;
    }
  } else if (
    /^(?=.{1,253}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/
      .test(host)
  ) return host;
  throw new ConfigError(
    "HOST must be an IPv4 or IPv6 address or a host name (e.g. 127.0.0.1, ::, localhost)",
  );
}

export const ADMIN_API_KEY_MIN_LENGTH = 32;

function adminApiKey(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  if (raw.length < ADMIN_API_KEY_MIN_LENGTH) {
    throw new ConfigError(
      `ADMIN_API_KEY must be at least ${ADMIN_API_KEY_MIN_LENGTH} characters: use a long random value`,
    );
  }
  return raw;
}

/** Shortest `METRICS_TOKEN` accepted: a scraper's bearer token is a secret too. */
export const METRICS_TOKEN_MIN_LENGTH = 24;

function metricsToken(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (raw.length < METRICS_TOKEN_MIN_LENGTH) {
    throw new ConfigError(
      `METRICS_TOKEN must be at least ${METRICS_TOKEN_MIN_LENGTH} characters: use a long random value`,
    );
  }
  return raw;
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const rawSecret = env.TOKEN_SECRET;
  let tokenSecret: Uint8Array | null;
  let tokenSecretGenerated = false;
  if (rawSecret === undefined) {
    tokenSecret = crypto.getRandomValues(new Uint8Array(32));
    tokenSecretGenerated = true;
  } else {
    const bytes = new TextEncoder().encode(rawSecret);
    tokenSecret = bytes.length >= 32 ? bytes : null;
  }

  const sfu = sfuConfig(env);

  let idp: Config["idp"] = null;
  if (env.IDP_ISSUER) {
    if (!env.IDP_JWKS_URL && !env.IDP_JWKS) {
      throw new ConfigError("IDP_ISSUER needs IDP_JWKS_URL or IDP_JWKS");
    }
    const audience = (env.IDP_AUDIENCE ?? "").trim();
    if (audience === "") {
      throw new ConfigError(
        "IDP_ISSUER needs IDP_AUDIENCE: the audience (aud) this service's tokens are issued for",
      );
    }
    idp = {
      issuer: env.IDP_ISSUER,
      audience,
      jwksUrl: env.IDP_JWKS_URL || undefined,
      jwks: env.IDP_JWKS || undefined,
      azpAllowlist: (env.IDP_AZP_ALLOWLIST ?? "").split(",").map((s) =>
        s.trim()
      ).filter(
        Boolean,
      ),
    };
  }

  const docs = docsBase(env);

  return {
    ...nodeConfig(env),
    port: int(env, "PORT", 8000),
    host: listenHost(env.HOST),
    kvPath: env.KV_PATH || defaultKvPath(env),
    adminApiKey: adminApiKey(env.ADMIN_API_KEY),
    metricsToken: metricsToken(env.METRICS_TOKEN),
    metricsTenantLabel: bool(env, "METRICS_TENANT_LABEL"),
    tokenSecret,
    tokenSecretGenerated,
    rateLimitPerMinute: int(env, "RATE_LIMIT_PER_MINUTE", 600, 1),
    requestBodyTimeoutMs: int(env, "REQUEST_BODY_TIMEOUT_MS", 10_000, 1),
    maxConcurrentSessions: int(env, "MAX_CONCURRENT_SESSIONS", 20, 1),
    renderMaxSessions: int(env, "RENDER_MAX_SESSIONS", defaultRenderSlots(), 0),
    renderReservationS: int(env, "RENDER_RESERVATION_S", 30, 1),
    paintWorkers: int(
      env,
      "PAINT_WORKERS",
      navigator.hardwareConcurrency ?? 2,
      0,
    ),
    avatarStoreMaxPerTenant: int(env, "AVATAR_STORE_MAX_PER_TENANT", 20, 0),
    startTimeoutMs: int(env, "START_TIMEOUT_MS", 15000, 1),
    endCleanupTimeoutMs: int(env, "END_CLEANUP_TIMEOUT_MS", 10000, 1),
    sessionConnectTimeoutS: int(env, "SESSION_CONNECT_TIMEOUT_S", 900, 1),
    sessionIdleTimeoutS: int(env, "SESSION_IDLE_TIMEOUT_S", 300, 1),
    sessionMaxDurationS: int(env, "SESSION_MAX_DURATION_S", 3600, 1),
    webhookSecret: env.WEBHOOK_SECRET || undefined,
    webhookRetryScheduleMs: msList(env, "WEBHOOK_RETRY_SCHEDULE_MS", [
      5_000,
      30_000,
      120_000,
      600_000,
      1_800_000,
      3_600_000,
      10_800_000,
      21_600_000,
      43_200_000,
    ]),
    webhookTimeoutMs: int(env, "WEBHOOK_TIMEOUT_MS", 10_000, 1),
    allowPrivateNetworkTargets: bool(env, "ALLOW_PRIVATE_NETWORK_TARGETS"),
    sfu,
    ice: iceConfig(env),
    idp,
    docsBaseUrl: docs.url,
    docsBaseIsDefault: docs.isDefault,
    publicUrl: env.PUBLIC_URL || undefined,
    providerEndpoints: {
      // The vendors' real endpoints (DECISIONS 7b); tests point them at fakes.
      vendorARealtimeUrl: env.VENDOR_A_REALTIME_URL ||
        "wss://api.openai.com/v1/realtime",
      vendorBUrl: env.VENDOR_B_URL || "wss://api.cartesia.ai/agents/stream",
      vendorCUrl: env.VENDOR_C_URL ||
        "wss://api.elevenlabs.io/v1/convai/conversation",
      vendorCApiUrl: env.VENDOR_C_API_URL || "https://api.elevenlabs.io",
    },
    renderClockStamp: bool(env, "RENDER_CLOCK_STAMP"),
    renderWorkerUrl: env.RENDER_WORKER_URL || undefined,
    renderWorkerToken: env.RENDER_WORKER_TOKEN || undefined,
    tryEngineUrl: env.TRY_ENGINE_URL || undefined,
    instanceUrl: instanceUrl(env.INSTANCE_URL),
  };
}
