/**
 * Storing a new session: the `created` record, its indexes and the tenant's open
 * counter in one commit that checks the counter (concurrent creates are exact).
 */
import type { AppDeps } from "../deps.ts";
import { ApiError } from "../errors.ts";
import { KeyedLock } from "../kv/keyed_lock.ts";
import { KvBudget, kvTry } from "../kv/store.ts";
import {
  conflictBackoff,
  counterValue,
  KV_U64_MINUS_ONE,
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
 * Its store time comes out of `budget` (the request's); once that is spent it answers
 * 503 `AVTR_SESSION_STATE_UNAVAILABLE` and the session is not stored (a commit already
 * under way that lands after that answer is undone: `undoLateInsert`).
 */
export async function insertSession(
  deps: AppDeps,
  record: SessionRecord,
  limit: number,
  extend?: InsertExtension,
  budget: KvBudget = new KvBudget(),
): Promise<void> {
  await tenantLocks(deps).run(
    record.tenant_id,
    () => commitNewSession(deps, record, limit, extend, budget),
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
  extend: InsertExtension | undefined,
  budget: KvBudget,
): Promise<void> {
  const counterKey = tenantOpenSessionsKey(record.tenant_id);
  for (let attempt = 0; attempt < MAX_COMMIT_ATTEMPTS; attempt++) {
    const keys = extend ? [counterKey, extend.check] : [counterKey];
    const [counter, claim] = await kvTry(() => deps.kv.getMany(keys), budget);
    if (extend && claim.versionstamp !== extend.versionstamp) {
      throw new ApiError(
        "AVTR_SESSION_STATE_UNAVAILABLE",
        "The request was superseded by a retry with the same Idempotency-Key",
        { cause: new Error("idempotency claim lost") },
      );
    }
    const open = counterValue(counter);
    if (open >= limit) throw concurrencyError(limit);
    const written: Deno.KvKey[] = [];
    const op = recordingSets(deps.kv.atomic(), written)
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
    let pending: Promise<Deno.KvCommitResult | Deno.KvCommitError> | undefined;
    let res: Deno.KvCommitResult | Deno.KvCommitError;
    try {
      res = await kvTry(() => pending = op.commit(), budget);
    } catch (err) {
      pending?.then((late) => {
        if (late.ok) undoLateInsert(deps, record, written, late.versionstamp);
      }, () => undefined);
      throw err;
    }
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

/** `op`, with the key of every `set` on it (the insert's and its hooks') added to `into`. */
function recordingSets(
  op: Deno.AtomicOperation,
  into: Deno.KvKey[],
): Deno.AtomicOperation {
  const proxy: Deno.AtomicOperation = new Proxy(op, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (prop === "set") into.push(args[0] as Deno.KvKey);
        const out = value.apply(target, args);
        return out === target ? proxy : out;
      };
    },
  });
  return proxy;
}

/**
 * Takes back an insert whose commit landed after its request was answered 503 (a
 * commit attempt cannot be called off once the store has it): deletes what the commit
 * set — the record, its indexes, the idempotency record, a `session.created` event
 * (its queued delivery then finds no event and is dropped) — and gives the counter back,
 * if the session is still as stored. Never throws.
 */
async function undoLateInsert(
  deps: AppDeps,
  record: SessionRecord,
  written: Deno.KvKey[],
  versionstamp: string,
): Promise<void> {
  const counterKey = tenantOpenSessionsKey(record.tenant_id);
  const op = deps.kv.atomic()
    .check({ key: sessionKey(record.session_id), versionstamp })
    .sum(counterKey, KV_U64_MINUS_ONE.value);
  for (const key of written) {
    if (!sameKey(key, counterKey)) op.delete(key);
  }
  try {
    const res = await kvTry(op.commit());
    deps.log.warn("a create answered 503 committed after the answer", {
      session_id: record.session_id,
      tenant: record.tenant_id,
      undone: res.ok,
    });
  } catch (err) {
    deps.log.error("a create answered 503 committed after the answer", {
      session_id: record.session_id,
      tenant: record.tenant_id,
      undone: false,
      err,
    });
  }
}

function sameKey(a: Deno.KvKey, b: Deno.KvKey): boolean {
  return a.length === b.length && a.every((part, i) => part === b[i]);
}

/** 429 `AVTR_RATE_LIMIT_CONCURRENT_SESSIONS`. */
export function concurrencyError(limit: number): ApiError {
  return new ApiError(
    "AVTR_RATE_LIMIT_CONCURRENT_SESSIONS",
    `Your tenant already has ${limit} live sessions; end one or try again later`,
  );
}
