/**
 * Public shapes of a session: the bodies of SPEC 2.3–2.7 built from a `SessionRecord`,
 * with freshly minted media tokens where the shape carries them, and the ownership
 * check every session-scoped call makes (SPEC 5.2).
 */
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import type {
  ClientTokenResponse,
  EndSessionResponse,
  SessionResponse,
  SessionStatusResponse,
  StreamMetadata,
} from "../api/schemas.ts";
import { SESSION_ID_PATTERN } from "../api/schemas.ts";
import { mintToken } from "../auth/tokens.ts";
import { isTerminal, recordOf, type SessionRecord } from "./store.ts";
import { iceServersFor } from "../sfu/mod.ts";

/** 404 `AVTR_SESSION_NOT_FOUND`, identical for absent and other tenants' sessions. */
export function sessionNotFound(): ApiError {
  return new ApiError("AVTR_SESSION_NOT_FOUND", "Session not found");
}

/** Whether `id` can name a session at all (SPEC 2.1). */
export function isSessionId(id: string): boolean {
  return id.length <= 128 && SESSION_ID_PATTERN.test(id);
}

/** The session in `entry` when `tenantId` owns it; else 404 `AVTR_SESSION_NOT_FOUND`. */
export function ownedSession(
  deps: AppDeps,
  tenantId: string,
  entry: Deno.KvEntryMaybe<unknown>,
): SessionRecord {
  const rec = recordOf(deps, entry);
  if (!rec || rec.tenant_id !== tenantId) throw sessionNotFound();
  return rec;
}

/**
 * The session's media socket URL, `{ws_base_url}/v1/sessions/{id}/ws`: the SFU
 * signalling endpoint of a `webrtc_sfu` session (DECISIONS 11). The base is
 * `PUBLIC_URL`, else this instance's URL, as ws(s)://.
 */
export function mediaSocketUrl(deps: AppDeps, sessionId: string): string {
  const base = (deps.config.publicUrl ?? deps.instanceUrl ??
    `http://localhost:${deps.config.port}`).replace(/\/+$/, "").replace(
      /^http/,
      "ws",
    );
  return `${base}/v1/sessions/${encodeURIComponent(sessionId)}/ws`;
}

/** Media tokens and stream metadata for `rec`, both tokens minted now. */
export function issueMediaTokens(
  deps: AppDeps,
  rec: SessionRecord,
): {
  client_token: string;
  expires_at: number;
  stream_metadata: StreamMetadata;
} {
  const client = mintToken(deps, rec.session_id, "client");
  const session = mintToken(deps, rec.session_id, "session");
  const sfu = rec.transport === "webrtc_sfu";
  return {
    client_token: client.token,
    expires_at: client.expiresAt,
    stream_metadata: {
      session_token: session.token,
      sfu_endpoint: sfu ? mediaSocketUrl(deps, rec.session_id) : null,
      ice_servers: sfu
        ? iceServersFor(deps.config, rec.session_id, deps.now())
        : [],
    },
  };
}

/** SPEC 2.3, with fresh tokens. */
export function toSessionResponse(
  deps: AppDeps,
  rec: SessionRecord,
): SessionResponse {
  const t = issueMediaTokens(deps, rec);
  return {
    session_id: rec.session_id,
    client_token: t.client_token,
    expires_at: t.expires_at,
    status: rec.status,
    transport: rec.transport,
    stream_metadata: t.stream_metadata,
  };
}

/** SPEC 2.5, with fresh tokens. */
export function toClientTokenResponse(
  deps: AppDeps,
  rec: SessionRecord,
): ClientTokenResponse {
  const t = issueMediaTokens(deps, rec);
  return { ...t, transport: rec.transport };
}

/**
 * SPEC 2.6: never a token. A terminal session also carries `end_reason`, `warning` when
 * `ended_with_warnings`, and `duration_s` and `chunks_rendered` when it ended from
 * `active` (DECISIONS 4).
 */
export function toStatusResponse(rec: SessionRecord): SessionStatusResponse {
  const out: SessionStatusResponse = {
    session_id: rec.session_id,
    transport: rec.transport,
    status: rec.status,
    provider_type: rec.provider_type,
    created_at: rec.created_at,
  };
  if (rec.started_at !== undefined) out.started_at = rec.started_at;
  if (rec.ended_at !== undefined) out.ended_at = rec.ended_at;
  if (!isTerminal(rec.status)) return out;
  if (rec.end_reason !== undefined) out.end_reason = rec.end_reason;
  if (rec.status === "ended_with_warnings") {
    out.warning = rec.warning ?? "Cleanup reported a problem";
  }
  if (rec.duration_s !== undefined) {
    out.duration_s = rec.duration_s;
    out.chunks_rendered = rec.chunks_rendered ?? 0;
  }
  return out;
}

/** SPEC 2.7 for a terminal `rec`. */
export function toEndResponse(rec: SessionRecord): EndSessionResponse {
  const out: EndSessionResponse = {
    session_id: rec.session_id,
    status: rec.status,
    ended_at: rec.ended_at ?? 0,
  };
  if (rec.status === "ended_with_warnings") {
    out.warning = rec.warning ?? "Cleanup reported a problem";
  }
  if (rec.chunks_rendered !== undefined) {
    out.chunks_rendered = rec.chunks_rendered;
  }
  if (rec.duration_s !== undefined) out.duration_s = rec.duration_s;
  return out;
}
