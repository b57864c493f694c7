/**
 * Storing a new session: the `created` record, its indexes and the tenant's open
 * counter in one commit that checks the counter (concurrent creates are exact).
 */
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../api/errors.ts";
import { KeyedLock } from "../kv/keyed_lock.ts";
import { kvTry } from "../kv/store.ts";
import {
  conflictBackoff,
  counterValue,
  MAX_COMMIT_ATTEMPTS,
  runAfterCommit,
  sessionKey,
  type SessionRecord,
  sessionsByTenantKey,
  sessionsOpenKey,
  tenantOpenSessionsKey,
} from "./store.ts";

/** More for the insert's commit: a key checked at its versionstamp, and writes. */
export interface InsertExtension {
  check: Deno.KvKey;
  versionstamp: string | null;
  apply: (op: Deno.AtomicOperation) => void;
}

/**
 * Stores a new `created` session and counts it against its tenant in one commit that
 * checks the counter's versionstamp (so concurrent creates are exact) and `extra`
 * (e.g. the idempotency claim). Answers 429 `AVTR_RATE_LIMIT_CONCURRENT_SESSIONS` when
 * the tenant is at `limit`. `extend` may add to the commit (the idempotency record).
 */
export async function insertSession(
  deps: AppDeps,
  record: SessionRecord,
  limit: number,
  extend?: InsertExtension,
): Promise<void> {
  await tenantLocks(deps).run(
    record.tenant_id,
    () => commitNewSession(deps, record, limit, extend),
  );
}

const locks = new WeakMap<AppDeps, KeyedLock>();

/** Creates of one tenant queue up in-process instead of racing on its counter. */
function tenantLocks(deps: AppDeps): KeyedLock {
  let lock = locks.get(deps);
  if (!lock) locks.set(deps, lock = new KeyedLock());
  return lock;
}

async function commitNewSession(
  deps: AppDeps,
  record: SessionRecord,
  limit: number,
  extend?: InsertExtension,
): Promise<void> {
  const counterKey = tenantOpenSessionsKey(record.tenant_id);
  for (let attempt = 0; attempt < MAX_COMMIT_ATTEMPTS; attempt++) {
    const keys = extend ? [counterKey, extend.check] : [counterKey];
    const [counter, claim] = await kvTry(deps.kv.getMany(keys));
    if (extend && claim.versionstamp !== extend.versionstamp) {
      throw new ApiError(
        "AVTR_SESSION_STATE_UNAVAILABLE",
        "The request was superseded by a retry with the same Idempotency-Key",
        { cause: new Error("idempotency claim lost") },
      );
    }
    const open = counterValue(counter);
    if (open >= limit) throw concurrencyError(limit);
    const op = deps.kv.atomic()
      .check(counter)
      .check({ key: sessionKey(record.session_id), versionstamp: null })
      .set(sessionKey(record.session_id), record)
      .set(
        sessionsByTenantKey(record.tenant_id, record.session_id),
        record.session_id,
      )
      .set(sessionsOpenKey(record.session_id), record.session_id)
      .set(counterKey, new Deno.KvU64(BigInt(open + 1)));
    if (extend) {
      op.check({ key: extend.check, versionstamp: extend.versionstamp });
      extend.apply(op);
    }
    for (const hook of deps.sessionHooks.inCommit) hook(op, null, record);
    const res = await kvTry(op.commit());
    if (res.ok) {
      runAfterCommit(deps, null, record);
      return;
    }
    await conflictBackoff(attempt);
  }
  throw new ApiError(
    "AVTR_SESSION_STATE_UNAVAILABLE",
    "Session state is busy, try again",
    { cause: new Error(`insertSession: ${MAX_COMMIT_ATTEMPTS} conflicts`) },
  );
}

/** 429 `AVTR_RATE_LIMIT_CONCURRENT_SESSIONS`. */
export function concurrencyError(limit: number): ApiError {
  return new ApiError(
    "AVTR_RATE_LIMIT_CONCURRENT_SESSIONS",
    `Your tenant already has ${limit} live sessions; end one or try again later`,
  );
}
