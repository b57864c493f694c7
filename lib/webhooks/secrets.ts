/**
 * Webhook signing secrets (DECISIONS 8): every tenant signs with a secret of its own.
 * Precedence: the tenant's own secret (created or rotated in the console) at
 * `["webhook_secrets", tenant]`; else, when `WEBHOOK_SECRET` is set, a secret derived
 * from it for the tenant (HKDF-SHA256, `derivedSecret`), never `WEBHOOK_SECRET` itself,
 * so no tenant can verify or forge another's deliveries; else a tenant secret created on
 * first use. A rotation keeps the replaced secret valid for `ROTATION_OVERLAP_MS`,
 * during which every delivery carries both signatures.
 *
 * Neither `WEBHOOK_SECRET` nor a secret derived from it reaches KV: when a rotation
 * replaces the derived one, the record holds the marker `previous_from: "env"` and
 * signing derives it again from config. A replaced secret past its `previous_until` is
 * dropped from the record when it is next read.
 */
import { hkdfSync } from "node:crypto";
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { administers, type Administrator } from "../principal.ts";
import { kvTry } from "../kv/store.ts";
import { generateSecret, SECRET_PREFIX, secretKey } from "./sign.ts";

/** How long a replaced secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

export interface TenantSecretRecord {
  current: string;
  /** The replaced tenant secret (absent when it was `WEBHOOK_SECRET`, see below). */
  previous?: string;
  /** `env`: the replaced secret was derived from `WEBHOOK_SECRET`; derived again on use. */
  previous_from?: "env";
  /** Epoch ms until which the replaced secret still signs. */
  previous_until?: number;
  created_at: number;
  rotated_at?: number;
}

/** What the console shows: the secret in force and where it comes from. */
export interface WebhookSecretView {
  secret: string;
  /**
   * `tenant`: the tenant's own, stored; `derived`: derived for this tenant from the
   * deployment's `WEBHOOK_SECRET` (never that secret itself).
   */
  source: "tenant" | "derived";
  /** Set while a replaced secret still signs (epoch ms). */
  previous_until?: number;
}

export const secretKeyFor = (tenantId: string) => ["webhook_secrets", tenantId];

/**
 * The secret `tenantId` signs with when it has none of its own and `WEBHOOK_SECRET` is
 * `envSecret`: HKDF-SHA256 with the decoded `envSecret` bytes as input key, an empty
 * salt and info `"webhook:" + tenantId`, 32 bytes, as `whsec_` + base64 (DECISIONS 8).
 */
export function derivedSecret(envSecret: string, tenantId: string): string {
  const okm = new Uint8Array(
    hkdfSync(
      "sha256",
      secretKey(envSecret),
      new Uint8Array(0),
      new TextEncoder().encode("webhook:" + tenantId),
      32,
    ),
  );
  let bin = "";
  for (const b of okm) bin += String.fromCharCode(b);
  return SECRET_PREFIX + btoa(bin);
}

/** `tenantId`'s secret derived from `WEBHOOK_SECRET`, or null when that is unset. */
function envDerived(deps: AppDeps, tenantId: string): string | null {
  const env = deps.config.webhookSecret;
  return env ? derivedSecret(env, tenantId) : null;
}

/** Throws 404 `AVTR_NOT_FOUND` unless `by` administers `tenantId` (DECISIONS 2). */
function assertAdministers(by: Administrator, tenantId: string): void {
  if (!administers(by, tenantId)) {
    throw new ApiError("AVTR_NOT_FOUND", "No such tenant");
  }
}

async function readTenantSecret(
  deps: AppDeps,
  tenantId: string,
): Promise<Deno.KvEntryMaybe<TenantSecretRecord>> {
  return await deps.kv.get<TenantSecretRecord>(secretKeyFor(tenantId));
}

/** Creates the tenant's secret unless one exists (a concurrent creator wins). */
async function createTenantSecret(
  deps: AppDeps,
  tenantId: string,
): Promise<TenantSecretRecord> {
  for (;;) {
    const entry = await readTenantSecret(deps, tenantId);
    if (entry.value) return entry.value;
    const record: TenantSecretRecord = {
      current: generateSecret(),
      created_at: deps.now(),
    };
    const res = await deps.kv.atomic().check(entry)
      .set(secretKeyFor(tenantId), record).commit();
    if (res.ok) return record;
  }
}

/** Whether `record` names a replaced secret at all (live or expired). */
const hasPrevious = (record: TenantSecretRecord): boolean =>
  record.previous !== undefined || record.previous_from !== undefined ||
  record.previous_until !== undefined;

/** The replaced secret that still signs at `now`, derived from config for `env`. */
function livePrevious(
  deps: AppDeps,
  tenantId: string,
  record: TenantSecretRecord,
  now: number,
): string | null {
  if (record.previous_until === undefined || record.previous_until <= now) {
    return null;
  }
  if (record.previous_from === "env") return envDerived(deps, tenantId);
  return record.previous ?? null;
}

/**
 * `entry`'s record, with a replaced secret past its overlap dropped from KV (best
 * effort: a concurrent writer wins, a failed write is retried on the next read).
 */
async function pruneExpired(
  deps: AppDeps,
  entry: Deno.KvEntryMaybe<TenantSecretRecord>,
): Promise<TenantSecretRecord | null> {
  const record = entry.value;
  if (!record || !hasPrevious(record)) return record;
  if (
    record.previous_until !== undefined && record.previous_until > deps.now()
  ) {
    return record;
  }
  const { previous: _p, previous_from: _f, previous_until: _u, ...kept } =
    record;
  try {
    await deps.kv.atomic().check(entry).set(entry.key, kept).commit();
  } catch (err) {
    deps.log.warn("webhook secret cleanup failed", {
      err: err instanceof Error ? err.message : String(err),
    });
  }
  return kept;
}

function view(
  deps: AppDeps,
  tenantId: string,
  record: TenantSecretRecord,
  now: number,
): WebhookSecretView {
  const out: WebhookSecretView = { secret: record.current, source: "tenant" };
  if (livePrevious(deps, tenantId, record, now) !== null) {
    out.previous_until = record.previous_until;
  }
  return out;
}

/**
 * The secrets that sign a delivery for `tenantId` now: the current one (the tenant's
 * own, else derived from `WEBHOOK_SECRET` for it), plus the replaced one during a
 * rotation's overlap. Creates a tenant secret when neither the tenant nor the
 * deployment has one.
 */
export async function signingSecrets(
  deps: AppDeps,
  tenantId: string,
): Promise<string[]> {
  const entry = await readTenantSecret(deps, tenantId);
  let record = await pruneExpired(deps, entry);
  if (!record) {
    const derived = envDerived(deps, tenantId);
    if (derived !== null) return [derived];
    record = await createTenantSecret(deps, tenantId);
  }
  const out = [record.current];
  const previous = livePrevious(deps, tenantId, record, deps.now());
  if (previous !== null) out.push(previous);
  return out;
}

/**
 * Reveals the secret that signs `tenantId`'s deliveries to `by` (for the console),
 * creating a tenant secret when neither the tenant nor the deployment has one. Throws
 * 404 `AVTR_NOT_FOUND` when `by` does not administer `tenantId`.
 */
export async function getWebhookSecret(
  deps: AppDeps,
  by: Administrator,
  tenantId: string,
): Promise<WebhookSecretView> {
  assertAdministers(by, tenantId);
  return await kvTry(async () => {
    const record = await pruneExpired(
      deps,
      await readTenantSecret(deps, tenantId),
    );
    if (record) return view(deps, tenantId, record, deps.now());
    const derived = envDerived(deps, tenantId);
    if (derived !== null) {
      return { secret: derived, source: "derived" as const };
    }
    return view(
      deps,
      tenantId,
      await createTenantSecret(deps, tenantId),
      deps.now(),
    );
  });
}

/**
 * Gives `tenantId` a new secret, on behalf of `by` (404 `AVTR_NOT_FOUND` when `by` does
 * not administer it). The one it replaces (the tenant's, or the one derived from
 * `WEBHOOK_SECRET` when the tenant had none, stored as a marker, never its value) keeps
 * signing for `ROTATION_OVERLAP_MS`; a secret replaced by an earlier rotation stops at once.
 */
export async function rotateWebhookSecret(
  deps: AppDeps,
  by: Administrator,
  tenantId: string,
): Promise<WebhookSecretView> {
  assertAdministers(by, tenantId);
  return await kvTry(async () => {
    for (;;) {
      const entry = await readTenantSecret(deps, tenantId);
      const now = deps.now();
      const record: TenantSecretRecord = {
        current: generateSecret(),
        created_at: entry.value?.created_at ?? now,
        rotated_at: now,
      };
      if (entry.value) {
        record.previous = entry.value.current;
        record.previous_until = now + ROTATION_OVERLAP_MS;
      } else if (deps.config.webhookSecret) {
        record.previous_from = "env";
        record.previous_until = now + ROTATION_OVERLAP_MS;
      }
      const res = await deps.kv.atomic().check(entry)
        .set(secretKeyFor(tenantId), record).commit();
      if (res.ok) return view(deps, tenantId, record, now);
    }
  });
}
