/**
 * Webhook signing secrets. Precedence: the tenant's own secret (created or rotated in
 * the console) at `["webhook_secrets", tenant]`; else `WEBHOOK_SECRET`; else a tenant
 * secret created on first use. A rotation keeps the replaced secret valid for
 * `ROTATION_OVERLAP_MS`, during which every delivery carries both signatures.
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../store.ts";
import { generateSecret } from "./sign.ts";

/** How long a replaced secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

export interface TenantSecretRecord {
  current: string;
  previous?: string;
  /** Epoch ms until which `previous` still signs. */
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

function view(record: TenantSecretRecord, now: number): WebhookSecretView {
  const out: WebhookSecretView = { secret: record.current, source: "tenant" };
  if (
    record.previous && record.previous_until !== undefined &&
    record.previous_until > now
  ) {
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
  let record = entry.value;
  if (!record) {
    if (deps.config.webhookSecret) return [deps.config.webhookSecret];
    record = await createTenantSecret(deps, tenantId);
  }
  const out = [record.current];
  if (
    record.previous && record.previous_until !== undefined &&
    record.previous_until > deps.now()
  ) out.push(record.previous);
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
    const entry = await readTenantSecret(deps, tenantId);
    if (entry.value) return view(entry.value, deps.now());
    if (deps.config.webhookSecret) {
      return { secret: deps.config.webhookSecret, source: "env" as const };
    }
    return view(await createTenantSecret(deps, tenantId), deps.now());
  });
}

/**
 * Gives `tenantId` a new secret. The one it replaces (the tenant's, or
 * `WEBHOOK_SECRET` when the tenant had none) keeps signing for `ROTATION_OVERLAP_MS`;
 * a secret replaced by an earlier rotation stops at once.
 */
export async function rotateWebhookSecret(
  deps: AppDeps,
  tenantId: string,
): Promise<WebhookSecretView> {
  return await kvTry(async () => {
    for (;;) {
      const entry = await readTenantSecret(deps, tenantId);
      const now = deps.now();
      const replaced = entry.value?.current ?? deps.config.webhookSecret;
      const record: TenantSecretRecord = {
        current: generateSecret(),
        created_at: entry.value?.created_at ?? now,
        rotated_at: now,
      };
      if (replaced) {
        record.previous = replaced;
        record.previous_until = now + ROTATION_OVERLAP_MS;
      }
      const res = await deps.kv.atomic().check(entry)
        .set(secretKeyFor(tenantId), record).commit();
      if (res.ok) return view(record, now);
    }
  });
}
