/**
 * Session creation: the single create-and-start call of SPEC 4.1 / DECISIONS 4.
 * validate → idempotency → tenant concurrency → render slot → provider pre-flight
 * (bounded by `START_TIMEOUT_MS`) → credentials into the vault → one commit. Any failure
 * frees the slot, zeroes the credentials and releases the idempotency claim. On a
 * control plane, everything after the idempotency claim runs on a media node.
 */
import type { Span } from "@opentelemetry/api";
import { inSpan } from "../metrics/tracing.ts";
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
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
  type CreateSessionInput,
  parseCreateSession,
  type SessionResponse,
} from "../api/schemas.ts";
import { KvBudget, kvTry } from "../kv/store.ts";
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
import { closeMountpoint } from "../sfu/mod.ts";
import type { ReserveRefusal } from "../ports/slots.ts";
import { openSessionMountpoint, resolveTransport } from "./transport.ts";
import {
  checkProviderTargets,
  credentialsOf,
  resolveAvatar,
} from "./create_input.ts";

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
 * 503 without render capacity, token secret or store. When the wiring chose a hand-off
 * (`deps.handOff`: a control plane hands the start work to a media node), the other
 * instance's refusals are these same errors.
 */
export function createSession(
  deps: AppDeps,
  request: CreateSessionRequest,
): Promise<CreateSessionResult> {
  return inSpan(
    "session.create",
    { "session.hand_off": deps.handOff !== null },
    (span) => create(deps, request, span),
  );
}

async function create(
  deps: AppDeps,
  request: CreateSessionRequest,
  span: Span,
): Promise<CreateSessionResult> {
  // What the body and the catalog can tell is answered before anything is claimed;
  // the rest depends on the config of the instance that starts the session.
  const handOff = deps.handOff;
  const input = await inSpan("session.validate", {}, async () => {
    const input = parseCreateSession(request.body);
    if (!handOff) checkProviderTargets(deps, input);
    await resolveAvatar(deps, request.tenantId, input.avatar_config);
    requireTokenSecret(deps);
    return input;
  });
  span.setAttribute("session.provider_type", input.provider_type);

  // The request's store time, shared by its KV operations (KV_TIMEOUT_MS in all).
  const kvBudget = new KvBudget();
  let claim: IdempotencyClaim | undefined;
  if (request.idempotencyKey !== undefined) {
    const begun = await beginIdempotent(
      deps,
      request.tenantId,
      request.idempotencyKey,
      fingerprintBody(deps, request.body),
      kvBudget,
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
  span.setAttribute("session.id", sessionId);
  let done = false;
  try {
    let record: SessionRecord | null;
    if (!handOff) {
      record = await startSession(deps, {
        tenantId: request.tenantId,
        input,
        sessionId,
        claim,
        kvBudget,
      });
    } else {
      // Its fetch carries the trace to the node: one trace, both instances.
      await inSpan("session.hand_off", {}, () =>
        handOff(deps, {
          tenantId: request.tenantId,
          body: request.body,
          sessionId,
          idempotencyKey: request.idempotencyKey,
          claim,
        }));
      done = true; // committed by the node, with the claim
      record = await readSession(deps, sessionId);
      if (!record) {
        throw new ApiError(
          "AVTR_SESSION_STATE_UNAVAILABLE",
          "The session was created but cannot be read right now; read it by its id",
        );
      }
    }
    done = true;
    return { response: toSessionResponse(deps, record), replayed: false };
  } finally {
    if (!done && claim) await releaseIdempotent(deps, claim, kvBudget);
  }
}

export interface StartSessionRequest {
  tenantId: string;
  input: CreateSessionInput;
  /** The new session's id. */
  sessionId: string;
  /** The `Idempotency-Key` claim the create commit completes. */
  claim?: IdempotencyClaim;
  /** The request's store time (a fresh `KV_TIMEOUT_MS` when omitted). */
  kvBudget?: KvBudget;
}

/**
 * The start work of a create on this instance, which becomes the session's owner
 * (DECISIONS 4): tenant concurrency → render slot → provider pre-flight and SFU
 * mountpoint (bounded by `START_TIMEOUT_MS`) → credentials into the vault → one commit,
 * which completes `claim` too. Any failure frees the slot, the mountpoint and the
 * credentials; the caller releases the claim.
 */
export async function startSession(
  deps: AppDeps,
  request: StartSessionRequest,
): Promise<SessionRecord> {
  const { input, sessionId } = request;
  if (deps.draining) {
    // A control plane tries its next node on this answer.
    throw new ApiError(
      "AVTR_RENDER_CAPACITY",
      "This instance is shutting down and takes no new session",
      { retryAfter: 5 },
    );
  }
  checkProviderTargets(deps, input);
  let transport = await resolveTransport(deps, input.transport);
  const { avatarId, bgId, slots } = await resolveAvatar(
    deps,
    request.tenantId,
    input.avatar_config,
  );
  requireTokenSecret(deps);
  const kvBudget = request.kvBudget ?? new KvBudget();
  let committed = false;
  try {
    const limit = await inSpan("session.reserve", {}, async () => {
      const [counter, settings] = await kvTry(
        () =>
          deps.kv.getMany([
            tenantOpenSessionsKey(request.tenantId),
            tenantSettingsKey(request.tenantId),
          ]),
        kvBudget,
      );
      const limit = concurrencyLimit(
        deps,
        settings.value as TenantSettings | null,
      );
      if (counterValue(counter) >= limit) throw concurrencyError(limit);
      const refused = deps.renderSlots.reserve(
        sessionId,
        request.tenantId,
        slots,
      );
      if (refused) throw capacityError(deps, refused, slots);
      return limit;
    });
    const creds = await inSpan(
      "session.preflight",
      {},
      () =>
        withStartTimeout(deps, async (signal) => {
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
        }),
    );
    deps.vault.put(sessionId, creds);
    const now = deps.now();
    const record: SessionRecord = {
      session_id: sessionId,
      tenant_id: request.tenantId,
      status: "created",
      provider_type: input.provider_type,
      transport,
      ...(transport === "webrtc_sfu" && input.transport === "auto"
        ? { fmp4_fallback: true as const }
        : {}),
      avatar_id: avatarId,
      ...(slots > 1 ? { render_slots: slots } : {}),
      bg_id: bgId,
      ...(input.webhook_url ? { webhook_url: input.webhook_url } : {}),
      created_at: now,
      owner: deps.instanceId,
      timeline: [{ status: "created", at: now }],
    };
    const held = request.claim;
    await inSpan("session.commit", {}, () =>
      insertSession(
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
        kvBudget,
      ));
    committed = true;
    deps.log.info("session created", {
      session_id: sessionId,
      tenant: request.tenantId,
      provider_type: input.provider_type,
      transport,
    });
    return record;
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
    }
  }
}

/** The 503 of a refused render reservation (`RenderSlots.reserve`). */
function capacityError(
  deps: AppDeps,
  refused: ReserveRefusal,
  slots: number,
): ApiError {
  const message = refused === "full"
    ? "No render capacity is free right now"
    : refused === "tenant_share"
    ? "Your tenant's sessions not yet connected hold their share of the render capacity; connect or end them first"
    : `This avatar's framing takes ${slots} render slots and this instance has ${deps.renderSlots.max}; use a square avatar or raise RENDER_MAX_SESSIONS`;
  return new ApiError("AVTR_RENDER_CAPACITY", message, {
    retryAfter: deps.renderSlots.retryAfterS(),
  });
}
