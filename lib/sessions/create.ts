/**
 * Session creation: the single create-and-start call of SPEC 4.1 / DECISIONS 4.
 * validate → idempotency → tenant concurrency → render slot → provider pre-flight
 * (bounded by `START_TIMEOUT_MS`) → credentials into the vault → one commit. Any failure
 * frees the slot, zeroes the credentials and releases the idempotency claim.
 */
import {
  DEFAULT_AVATAR_ID,
  DEFAULT_BG_ID,
  findAvatar,
  findBackground,
} from "../avatars.ts";
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../api/errors.ts";
import {
  beginIdempotent,
  completeIdempotent,
  fingerprintBody,
  type IdempotencyClaim,
  releaseIdempotent,
} from "./idempotency.ts";
import { ulid } from "../ids.ts";
import { preflightProvider } from "../providers/preflight.ts";
import {
  EngineStartError,
  type ProviderCredentials,
} from "../providers/port.ts";
import { vendorCUrl } from "../providers/vendor_c.ts";
import {
  type CreateSessionInput,
  parseCreateSession,
  type SessionResponse,
  type Transport,
} from "../api/schemas.ts";
import { kvTry } from "../kv/store.ts";
import {
  concurrencyLimit,
  type TenantSettings,
  tenantSettingsKey,
} from "../tenants.ts";
import { requireTokenSecret } from "../auth/tokens.ts";
import {
  counterValue,
  readSession,
  type SessionRecord,
  tenantOpenSessionsKey,
} from "./store.ts";
import { concurrencyError, insertSession } from "./insert.ts";
import { toSessionResponse } from "./views.ts";
import {
  closeMountpoint,
  markSfuFailing,
  openMountpoint,
  SfuError,
  sfuHealthy,
} from "../sfu/mod.ts";

export interface CreateSessionRequest {
  tenantId: string;
  /** The request body, a JSON object (not yet validated). */
  body: Record<string, unknown>;
  /** A valid `Idempotency-Key`, when the request had one. */
  idempotencyKey?: string;
}

export interface CreateSessionResult {
  response: SessionResponse;
  /** True when an earlier request with the same `Idempotency-Key` made the session. */
  replayed: boolean;
}

/**
 * The transport a create gets (SPEC 2.2, DECISIONS 11): `webrtc_sfu` needs `SFU_URL`
 * and the built-in renderer (else 400 `AVTR_SFU_NOT_CONFIGURED`, never a fall back);
 * `auto` picks `webrtc_sfu` when that holds and the SFU answered its last health probe,
 * else `websocket_fmp4`.
 */
export async function resolveTransport(
  deps: AppDeps,
  requested: Transport,
): Promise<Exclude<Transport, "auto">> {
  // A render worker has no RTP output (lib/render/port.ts publishRtp): no SFU path.
  const usable = deps.sfu !== null && !deps.config.renderWorkerUrl;
  if (requested === "webrtc_sfu") {
    if (!usable) {
      throw new ApiError(
        "AVTR_SFU_NOT_CONFIGURED",
        "transport webrtc_sfu is not available on this deployment",
        { param: "transport" },
      );
    }
    return "webrtc_sfu";
  }
  if (requested === "auto" && usable && await sfuHealthy(deps)) {
    return "webrtc_sfu";
  }
  return "websocket_fmp4";
}

/** The `AVTR_SFU_*` error for an SFU failure during create. */
export function sfuCreateError(err: unknown): ApiError {
  const kind = err instanceof SfuError ? err.kind : "connection";
  switch (kind) {
    case "full":
      return new ApiError(
        "AVTR_SFU_ROOM_FULL",
        "The realtime SFU has no room for another session",
        { cause: err },
      );
    case "negotiation":
      return new ApiError(
        "AVTR_SFU_NEGOTIATION_FAILED",
        "The realtime SFU refused the session's mountpoint",
        { cause: err },
      );
    default:
      return new ApiError(
        "AVTR_SFU_CONNECTION_FAILED",
        "The realtime SFU could not be reached",
        { cause: err },
      );
  }
}

/**
 * Opens the session's SFU mountpoint. A requested `webrtc_sfu` fails with an
 * `AVTR_SFU_*` code; an `auto` that picked the SFU falls back to `websocket_fmp4`.
 */
async function openSessionMountpoint(
  deps: AppDeps,
  sessionId: string,
  requested: Transport,
  signal: AbortSignal,
): Promise<Exclude<Transport, "auto">> {
  try {
    await openMountpoint(deps, sessionId, signal);
    return "webrtc_sfu";
  } catch (err) {
    if (!(err instanceof SfuError) && !signal.aborted) throw err;
    if (!(err instanceof SfuError) || err.kind === "connection") {
      markSfuFailing(deps);
    }
    if (requested === "auto") {
      deps.log.warn("sfu: mountpoint failed; auto uses websocket_fmp4", {
        session_id: sessionId,
        err,
      });
      return "websocket_fmp4";
    }
    throw sfuCreateError(err);
  }
}

/** The catalog entries named by `avatar_config` (defaults when omitted), else 400. */
export function resolveAvatar(
  config: CreateSessionInput["avatar_config"],
): { avatarId: string; bgId: string } {
  const avatarId = config?.avatar_id ?? DEFAULT_AVATAR_ID;
  const bgId = config?.bg_id ?? DEFAULT_BG_ID;
  if (!findAvatar(avatarId)) {
    throw new ApiError(
      "AVTR_RENDER_MISCONFIGURED",
      "avatar_config.avatar_id names no avatar of the catalog",
      { param: "avatar_config.avatar_id" },
    );
  }
  if (!findBackground(bgId)) {
    throw new ApiError(
      "AVTR_RENDER_MISCONFIGURED",
      "avatar_config.bg_id names no background of the catalog",
      { param: "avatar_config.bg_id" },
    );
  }
  return { avatarId, bgId };
}

/**
 * Refuses what the body's shape cannot tell but the deployment's config can: a
 * `vendor_c.signed_url` off the configured conversation endpoint (scheme, host, port,
 * path of `VENDOR_C_URL`) → 400 `AVTR_PROVIDER_MISCONFIGURED` with its `param`. The
 * adapter checks the same again at connect. Neither the URL (it holds a token) nor the
 * configured endpoint is echoed.
 */
export function checkProviderTargets(
  deps: AppDeps,
  input: CreateSessionInput,
): void {
  const signedUrl = input.provider_config.vendor_c?.signed_url;
  if (input.provider_type !== "vendor_c" || signedUrl === undefined) return;
  const endpoint = deps.config.providerEndpoints.vendorCUrl;
  try {
    vendorCUrl(endpoint, { agent_id: "", signed_url: signedUrl });
  } catch (err) {
    if (!(err instanceof EngineStartError)) throw err;
    // The configured endpoint is deployment detail: the message does not name it.
    throw new ApiError(
      "AVTR_PROVIDER_MISCONFIGURED",
      "provider_config.vendor_c.signed_url must be a wss:// URL on the provider's conversation endpoint",
      { param: "provider_config.vendor_c.signed_url" },
    );
  }
}

/** The credentials part of a validated request, for the vault. */
export function credentialsOf(input: CreateSessionInput): ProviderCredentials {
  const cfg = input.provider_config;
  switch (input.provider_type) {
    case "vendor_a_realtime":
      return { type: "vendor_a_realtime", ...cfg.vendor_a_realtime! };
    case "vendor_b":
      return { type: "vendor_b", ...cfg.vendor_b! };
    case "external_engine":
      return { type: "external_engine", ...cfg.external_engine! };
    case "vendor_c":
      return { type: "vendor_c", ...cfg.vendor_c! };
  }
}

/** Runs `work` with a signal aborted after `START_TIMEOUT_MS`. */
async function withStartTimeout<T>(
  deps: AppDeps,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const ctl = new AbortController();
  const timer = setTimeout(
    () => ctl.abort(new Error("start timeout")),
    deps.config.startTimeoutMs,
  );
  try {
    return await work(ctl.signal);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Creates and starts a session for `tenantId` (SPEC 4.1). Throws the `ApiError`s of
 * DECISIONS 3/4/11: 400s for the body (and a `vendor_c.signed_url` off `VENDOR_C_URL`,
 * and `webrtc_sfu` without an SFU), 422 for an idempotency mismatch, 429 over the
 * tenant's limit, 502/503/504 from the provider pre-flight and the SFU's mountpoint,
 * 503 without render capacity, token secret or store.
 */
export async function createSession(
  deps: AppDeps,
  request: CreateSessionRequest,
): Promise<CreateSessionResult> {
  const input = parseCreateSession(request.body);
  checkProviderTargets(deps, input);
  let transport = await resolveTransport(deps, input.transport);
  const { avatarId, bgId } = resolveAvatar(input.avatar_config);
  requireTokenSecret(deps);

  let claim: IdempotencyClaim | undefined;
  if (request.idempotencyKey !== undefined) {
    const begun = await beginIdempotent(
      deps,
      request.tenantId,
      request.idempotencyKey,
      fingerprintBody(deps, request.body),
    );
    if (begun.kind === "replay") {
      const rec = await readSession(deps, begun.sessionId);
      if (!rec || rec.tenant_id !== request.tenantId) {
        throw new ApiError(
          "AVTR_SESSION_STATE_UNAVAILABLE",
          "The session of this Idempotency-Key cannot be read right now",
        );
      }
      return { response: toSessionResponse(deps, rec), replayed: true };
    }
    claim = begun.claim;
  }

  const sessionId = `session:${ulid(deps.now())}`;
  let committed = false;
  try {
    const [counter, settings] = await kvTry(deps.kv.getMany([
      tenantOpenSessionsKey(request.tenantId),
      tenantSettingsKey(request.tenantId),
    ]));
    const limit = concurrencyLimit(
      deps,
      settings.value as TenantSettings | null,
    );
    if (counterValue(counter) >= limit) throw concurrencyError(limit);
    const refused = deps.renderSlots.reserve(sessionId, request.tenantId);
    if (refused) {
      throw new ApiError(
        "AVTR_RENDER_CAPACITY",
        refused === "full"
          ? "No render capacity is free right now"
          : "Your tenant's sessions not yet connected hold their share of the render capacity; connect or end them first",
        { retryAfter: deps.renderSlots.retryAfterS() },
      );
    }
    const creds = await withStartTimeout(deps, async (signal) => {
      const creds = await preflightProvider(
        deps,
        credentialsOf(input),
        signal,
      );
      if (transport === "webrtc_sfu") {
        transport = await openSessionMountpoint(
          deps,
          sessionId,
          input.transport,
          signal,
        );
      }
      return creds;
    });
    deps.vault.put(sessionId, creds);
    const now = deps.now();
    const record: SessionRecord = {
      session_id: sessionId,
      tenant_id: request.tenantId,
      status: "created",
      provider_type: input.provider_type,
      transport,
      avatar_id: avatarId,
      bg_id: bgId,
      ...(input.webhook_url ? { webhook_url: input.webhook_url } : {}),
      created_at: now,
      owner: deps.instanceId,
      timeline: [{ status: "created", at: now }],
    };
    const held = claim;
    await insertSession(
      deps,
      record,
      limit,
      held
        ? {
          check: held.key,
          versionstamp: held.versionstamp,
          apply: (op) => completeIdempotent(deps, op, held, sessionId),
        }
        : undefined,
    );
    committed = true;
    deps.log.info("session created", {
      session_id: sessionId,
      tenant: request.tenantId,
      provider_type: input.provider_type,
      transport,
    });
    return { response: toSessionResponse(deps, record), replayed: false };
  } finally {
    if (!committed) {
      deps.vault.zero(sessionId);
      deps.renderSlots.release(sessionId);
      if (transport === "webrtc_sfu") {
        await closeMountpoint(deps, sessionId).catch((err) =>
          deps.log.warn("sfu: mountpoint destroy failed; the sweep retries", {
            session_id: sessionId,
            err,
          })
        );
      }
      if (claim) await releaseIdempotent(deps, claim);
    }
  }
}
