/**
 * The types everything shares: `AppDeps`, the object graph the app's routes and services
 * share, built once per app instance by the composition root (lib/wire.ts). This module
 * imports types only, so a domain module that names `AppDeps` reaches no adapter (Janus,
 * media nodes, the renderer) through it.
 */
import type { Config } from "./config.ts";
import type { Logger } from "./log.ts";
import type { SessionRuntime } from "./runtime.ts";
import type { CredentialVault } from "./vault.ts";
import type { RenderSlots } from "./ports/slots.ts";
import type { SfuPort } from "./ports/sfu.ts";
import type { AppMetrics } from "./metrics/registry.ts";

/**
 * Extension points of a session move (lib/sessions.ts calls them): `inCommit` hooks add
 * to the atomic operation that makes the move (so a webhook event is enqueued in the
 * same commit), `afterCommit` hooks react once it is durable (release memory).
 * `before` is null on create.
 */
export interface SessionHooks {
  inCommit: Array<
    (op: Deno.AtomicOperation, before: unknown | null, after: unknown) => void
  >;
  afterCommit: Array<(before: unknown | null, after: unknown) => void>;
}

export interface AppDeps {
  config: Config;
  kv: Deno.Kv;
  /**
   * The handle the request path's point reads go through (`kvReadBatcher`): for a local
   * KV file a second handle on the same file, so those reads never queue behind a
   * commit (or a wait for another process's write lock) on `kv`; else `kv` itself.
   */
  readKv: Deno.Kv;
  /** The clock (epoch ms). Tests inject their own. */
  now: () => number;
  log: Logger;
  /** Runs when the app closes, last registered first. */
  onClose: Array<() => void | Promise<void>>;
  /** This process's instance id (owner of the sessions it creates). */
  instanceId: string;
  /**
   * Base URL at which other instances reach this one (`INSTANCE_URL`, else set by
   * `main.ts` once it listens); media sockets that land elsewhere are relayed here.
   */
  instanceUrl: string | undefined;
  sessionHooks: SessionHooks;
  /** The live side of sessions; replaced by the media plane at start. */
  runtime: SessionRuntime;
  /** Per-session provider credentials, in memory only (lib/vault.ts). */
  vault: CredentialVault;
  /** This instance's Prometheus metrics (lib/metrics/registry.ts, `/metrics`). */
  metrics: AppMetrics;
  /** This instance's render slots (lib/ports/slots.ts). */
  renderSlots: RenderSlots;
  /**
   * Set when the instance is draining (lib/nodes/drain.ts): it takes no new session and
   * says so in its registry record and `/readyz`.
   */
  draining: boolean;
  /** The realtime SFU (lib/sfu/), when `SFU_URL` is set. */
  sfu: SfuPort | null;
  /**
   * Which Janus `config.sfu` names (lib/sfu/identity.ts), null without one: mountpoint
   * records carry it, so only instances on the same Janus touch a mountpoint.
   */
  sfuId: string | null;
  /**
   * The session starter chosen at wiring (lib/wire.ts): null starts a create's session on
   * this instance; a control plane hands each to a media node (lib/nodes/handoff.ts).
   */
  handOff: SessionHandOff | null;
}

/**
 * Hands a create's start work (DECISIONS 4) to the instance that will hold the session;
 * resolves once that instance committed it, throws its refusal as an `ApiError`.
 */
export type SessionHandOff = (
  deps: AppDeps,
  start: HandOffStart,
) => Promise<unknown>;

/** What a create passes to the instance that starts its session. */
export interface HandOffStart {
  tenantId: string;
  /** The create body as the customer sent it, credentials included. */
  body: Record<string, unknown>;
  /** The new session's id. */
  sessionId: string;
  /** The `Idempotency-Key` header's value, when the create had one. */
  idempotencyKey?: string;
  /**
   * Its claim (lib/sessions/idempotency.ts), which the starting instance's create commit
   * completes: what of it crosses the hand-off.
   */
  claim?: {
    key: Deno.KvKey;
    versionstamp: string;
    record: {
      fingerprint: string;
      created_at: number;
      expires_at: number;
      pending_until: number;
    };
  };
}

export interface DepsOptions {
  env?: Record<string, string | undefined>;
  config?: Config;
  kv?: Deno.Kv;
  now?: () => number;
  log?: Logger;
  /** Overrides the SFU built from the config. */
  sfu?: SfuPort | null;
}
