/**
 * Webhook signing secrets. Precedence: the tenant's own secret (created or rotated in
 * the console) at `["webhook_secrets", tenant]`; else `WEBHOOK_SECRET`; else a tenant
 * secret created on first use. A rotation keeps the replaced secret valid for
 * `ROTATION_OVERLAP_MS`, during which every delivery carries both signatures.
 *
 * `WEBHOOK_SECRET` never reaches KV: when a rotation replaces it, the record holds the
 * marker `previous_from: "env"` and signing resolves it from config. A replaced secret
 * past its `previous_until` is dropped from the record when it is next read.
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";
import { generateSecret } from "./sign.ts";

/** How long a replaced secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

export interface TenantSecretRecord {
  current: string;
  /** The replaced tenant secret (absent when it was `WEBHOOK_SECRET`, see below). */
  previous?: string;
  /** `env`: the replaced secret is the deployment's `WEBHOOK_SECRET`, read from config. */
  previous_from?: "env";
  /** Epoch ms until which the replaced secret still signs. */
  previous_until?: number;
  created_at: number;
  rotated_at?: number;
}

/** What the console shows: the secret in force and where it comes from. */
export interface WebhookSecretView {
  secret: string;
  /** `tenant`: the tenant's own; `env`: the deployment's `WEBHOOK_SECRET`. */
  source: "tenant" | "env";
  /** Set while a replaced secret still signs (epoch ms). */
  previous_until?: number;
}

export const secretKeyFor = (tenantId: string) => ["webhook_secrets", tenantId];

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

/** The replaced secret that still signs at `now`, resolved from config for `env`. */
function livePrevious(
  deps: AppDeps,
  record: TenantSecretRecord,
  now: number,
): string | null {
  if (record.previous_until === undefined || record.previous_until <= now) {
    return null;
  }
  if (record.previous_from === "env") return deps.config.webhookSecret ?? null;
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
  record: TenantSecretRecord,
  now: number,
): WebhookSecretView {
  const out: WebhookSecretView = { secret: record.current, source: "tenant" };
  if (livePrevious(deps, record, now) !== null) {
    out.previous_until = record.previous_until;
  }
  return out;
}

/**
 * The secrets that sign a delivery for `tenantId` now: the current one, plus the
 * replaced one during a rotation's overlap. Creates a tenant secret when neither the
 * tenant nor the deployment has one.
 */
export async function signingSecrets(
  deps: AppDeps,
  tenantId: string,
): Promise<string[]> {
  const entry = await readTenantSecret(deps, tenantId);
  let record = await pruneExpired(deps, entry);
  if (!record) {
    if (deps.config.webhookSecret) return [deps.config.webhookSecret];
    record = await createTenantSecret(deps, tenantId);
  }
  const out = [record.current];
  const previous = livePrevious(deps, record, deps.now());
  if (previous !== null) out.push(previous);
  return out;
}

/**
 * Reveals the secret that signs `tenantId`'s deliveries (for the console), creating a
 * tenant secret when neither the tenant nor the deployment has one.
 */
export async function getWebhookSecret(
  deps: AppDeps,
  tenantId: string,
): Promise<WebhookSecretView> {
  return await kvTry(async () => {
    const record = await pruneExpired(
      deps,
      await readTenantSecret(deps, tenantId),
    );
    if (record) return view(deps, record, deps.now());
    if (deps.config.webhookSecret) {
      return { secret: deps.config.webhookSecret, source: "env" as const };
    }
    return view(deps, await createTenantSecret(deps, tenantId), deps.now());
  });
}

/**
 * Gives `tenantId` a new secret. The one it replaces (the tenant's, or
 * `WEBHOOK_SECRET` when the tenant had none, stored as a marker, never its value) keeps
 * signing for `ROTATION_OVERLAP_MS`; a secret replaced by an earlier rotation stops at once.
 */
export async function rotateWebhookSecret(
  deps: AppDeps,
  tenantId: string,
): Promise<WebhookSecretView> {
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
      if (res.ok) return view(deps, record, now);
    }
  });
}
