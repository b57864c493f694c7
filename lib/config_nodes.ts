/**
 * The hosting topology's variables (docs/operations.md, "Control plane and media
 * nodes"): which role this process plays, the secret control plane and media nodes share
 * for session handoffs, and how often instances heartbeat.
 */
import { ConfigError } from "./config_error.ts";

/**
 * `all`: one process does everything (the default). `control`: the control plane (REST,
 * console, docs, webhooks; no engine, renderer or subprocess; creates are handed to a
 * media node). `media`: a media node (holds engines, renderers and credentials, takes
 * handoffs from the control plane, registers its URL and free capacity).
 */
export type ServiceRole = "all" | "control" | "media";

export interface NodeConfig {
  role: ServiceRole;
  /** HMAC key of the handoff call (`NODE_SECRET`, ≥ 32 bytes); set for control and media. */
  nodeSecret: Uint8Array | undefined;
  /**
   * A media node also accepts calls signed with this one (`NODE_SECRET_PREVIOUS`), so
   * the secret can be rotated without a moment where nodes and control plane disagree.
   */
  nodeSecretPrevious: Uint8Array | undefined;
  /** How often an instance refreshes its registry record (`NODE_HEARTBEAT_MS`). */
  heartbeatMs: number;
  /**
   * On SIGTERM, how long an instance holding sessions keeps serving them while it takes
   * no new ones (`NODE_DRAIN_S`); 0 stops at once.
   */
  drainS: number;
}

/** A `NODE_SECRET` shorter than this refuses the start. */
export const NODE_SECRET_MIN_BYTES = 32;
/** Default heartbeat; an instance silent for 3.5 of them counts as gone. */
export const DEFAULT_HEARTBEAT_MS = 10_000;

export function nodeConfig(
  env: Record<string, string | undefined>,
): NodeConfig {
  const role = env.SERVICE_ROLE || "all";
  if (role !== "all" && role !== "control" && role !== "media") {
    throw new ConfigError("SERVICE_ROLE must be all, control or media");
  }
  let nodeSecret: Uint8Array | undefined;
  if (role !== "all") {
    const bytes = new TextEncoder().encode(env.NODE_SECRET ?? "");
    if (bytes.length < NODE_SECRET_MIN_BYTES) {
      throw new ConfigError(
        `SERVICE_ROLE=${role} needs NODE_SECRET: at least ${NODE_SECRET_MIN_BYTES} random bytes shared by the control plane and every media node`,
      );
    }
    nodeSecret = bytes;
  }
  let nodeSecretPrevious: Uint8Array | undefined;
  if (role !== "all" && env.NODE_SECRET_PREVIOUS) {
    nodeSecretPrevious = new TextEncoder().encode(env.NODE_SECRET_PREVIOUS);
    if (nodeSecretPrevious.length < NODE_SECRET_MIN_BYTES) {
      throw new ConfigError(
        `NODE_SECRET_PREVIOUS must be at least ${NODE_SECRET_MIN_BYTES} bytes, as NODE_SECRET`,
      );
    }
  }
  const raw = env.NODE_HEARTBEAT_MS;
  const heartbeatMs = raw === undefined || raw === ""
    ? DEFAULT_HEARTBEAT_MS
    : Number(raw);
  if (!Number.isInteger(heartbeatMs) || heartbeatMs < 100) {
    throw new ConfigError("NODE_HEARTBEAT_MS must be an integer >= 100");
  }
  const rawDrain = env.NODE_DRAIN_S;
  const drainS = rawDrain === undefined || rawDrain === ""
    ? 0
    : Number(rawDrain);
  if (!Number.isInteger(drainS) || drainS < 0) {
    throw new ConfigError("NODE_DRAIN_S must be an integer >= 0");
  }
  return { role, nodeSecret, nodeSecretPrevious, heartbeatMs, drainS };
}
