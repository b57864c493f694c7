/**
 * Relaying a media socket that reached an instance which does not hold the session: the
 * browser's socket is joined to a socket opened to the holder (its `url` from the
 * instance registry), frame for frame in both directions, so any instance can take any
 * request. The holder checks the token again; nothing is stored here.
 *
 * A relay is itself a browser-facing socket: it applies the media socket's frame gate
 * (./gate.ts: the byte bound as frames arrive, then size, text and microphone rates)
 * before forwarding, and bounds what it
 * queues either way (`RELAY_MAX_BUFFERED_BYTES`, then 1013). It never dials its own
 * instance, and marks the socket it opens (`RELAY_HEADER`, signed) so the holder never
 * relays it again: a restarted instance at the same URL answers its old sessions itself.
 */
import type { AppDeps } from "../deps.ts";
import { kvTry } from "../kv/store.ts";
import { isTerminal, readSession } from "../sessions/store.ts";
import { bindSocket, socketOpened } from "./contain.ts";
import { FrameGate } from "./gate.ts";
import {
  CLOSE_FLOODING,
  CLOSE_TOO_BIG,
  DEFAULT_BROWSER_SAMPLE_RATE,
} from "./protocol.ts";
import {
  heartbeatFresh,
  instanceKey,
  type InstanceRecord,
  instanceUrlAllowed,
} from "./presence.ts";
import { RELAY_HEADER, relaySecrets, signRelayMark } from "./relay_mark.ts";

/** A frame's size in bytes: a text frame's UTF-8 at most 3 bytes a code unit. */
function sizeOf(frame: string | ArrayBuffer): number {
  return typeof frame === "string" ? frame.length * 3 : frame.byteLength;
}

/** Bytes either side may have queued before the relay gives up on it (1013). */
export const RELAY_MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
/**
 * Bytes of browser frames held while the upstream socket opens (frames are at most
 * 64 KiB each); past it, frames are dropped until the upstream is open.
 */
export const RELAY_MAX_PENDING_BYTES = 256 * 1024;

/**
 * Where other instances reach `owner`, or null when it has no fresh heartbeat, when a
 * control plane would reach it without TLS (as it never hands off to such a node),
 * or when it is this instance (by id, or by URL: a restarted process at the same
 * address finds its dead predecessor's record still fresh).
 */
async function holderUrl(deps: AppDeps, owner: string): Promise<string | null> {
  if (owner === deps.instanceId) return null;
  const entry = await kvTry(deps.kv.get<InstanceRecord>(instanceKey(owner)));
  const rec = entry.value;
  if (!heartbeatFresh(deps, rec) || !rec.url) return null;
  if (deps.config.role === "control" && !instanceUrlAllowed(deps, rec.url)) {
    // The socket's token would cross the network in the clear, as a handoff would.
    deps.log.warn("relay refused: the holder's URL is not https", {
      node: owner,
    });
    return null;
  }
  return rec.url === deps.instanceUrl ? null : rec.url;
}

/** The holder's media socket URL for `sessionId`, or null when it is not reachable. */
export async function holderSocketUrl(
  deps: AppDeps,
  owner: string,
  sessionId: string,
  token: string,
): Promise<string | null> {
  const url = await holderUrl(deps, owner);
  if (!url) return null;
  return `${url.replace(/^http/, "ws")}/v1/sessions/${
    encodeURIComponent(sessionId)
  }/ws?token=${encodeURIComponent(token)}`;
}

/**
 * Deno's WebSocket takes handshake headers (non-standard); the `dom` lib this project
 * also loads types the constructor without them.
 */
const WebSocketWithHeaders = WebSocket as unknown as new (
  url: string,
  options: { headers: HeadersInit },
) => WebSocket;

/** How long the holder's `/healthz` may take to show it is still up. */
const HOLDER_PROBE_MS = 2_000;

/**
 * Whether `sessionId` is open and its holder is up: a fresh heartbeat, and its
 * `/healthz` answers (a killed holder's heartbeat stays fresh for a while; its port
 * refuses at once).
 */
async function stillHeld(deps: AppDeps, sessionId: string): Promise<boolean> {
  const session = await readSession(deps, sessionId);
  if (!session || isTerminal(session.status)) return false;
  const url = await holderUrl(deps, session.owner);
  if (!url) return false;
  try {
    const res = await fetch(`${url}/healthz`, {
      signal: AbortSignal.timeout(HOLDER_PROBE_MS),
      redirect: "error",
    });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** Close codes a server may send as they are (the rest, e.g. 1005/1006, become 1011). */
const SENDABLE = new Set([1000, 1001, 1008, 1009, 1011, 1013]);

/** A close code a server socket may be closed with from script. */
function passableCode(code: number): number {
  return SENDABLE.has(code) || (code >= 3000 && code <= 4999) ? code : 1011;
}

/**
 * A close code the relay's upstream, a client socket, may send: 1000 or 3000–4999 only
 * (any other throws, and the socket stayed open on the holder); the holder reads none.
 */
function clientCode(code: number): number {
  return code >= 3000 && code <= 4999 ? code : 1000;
}

function safeClose(ws: WebSocket, code: number, reason = ""): void {
  try {
    if (
      ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING
    ) {
      ws.close(code, reason.slice(0, 120));
    }
  } catch { /* already closing */ }
}

/**
 * Joins `browser` (a freshly upgraded socket) to `owner`, the holder at `upstreamUrl`.
 * Closing either side closes the other with the same code.
 */
export function relaySocket(
  deps: AppDeps,
  browser: WebSocket,
  upstreamUrl: string,
  sessionId: string,
  owner: string,
): void {
  const [secret] = relaySecrets(deps.config);
  const relayed = deps.metrics.relayBytes;
  const headers: Record<string, string> = {};
  if (secret) {
    headers[RELAY_HEADER] = signRelayMark(secret, owner, sessionId, deps.now());
  }
  const upstream = new WebSocketWithHeaders(upstreamUrl, { headers });
  upstream.binaryType = "arraybuffer";
  browser.binaryType = "arraybuffer";
  const pending: (string | ArrayBuffer)[] = [];
  let pendingBytes = 0;
  let done = false;
  const finish = (code: number, reason: string) => {
    if (done) return;
    done = true;
    open.delete(finish);
    // Frames held for an upstream that will not open now go with the relay.
    pending.length = 0;
    pendingBytes = 0;
    safeClose(browser, passableCode(code), reason);
    safeClose(upstream, clientCode(code), reason);
  };
  const open = openRelays(deps);
  open.add(finish);

  let upstreamOpened = false;
  const gate = new FrameGate(() => deps.now());
  let browserRate = DEFAULT_BROWSER_SAMPLE_RATE;
  const log = deps.log;
  const broken = () => finish(1011, "relay error");
  /**
   * The holder closed before the socket opened. A live holder refused it for now (429
   * past the takeover rate, 503 without a render slot, which a browser cannot read
   * from a failed upgrade): close 1013 so the client retries with its backoff. A holder
   * that is gone, or a session that is over, ends it for this browser: only the holder
   * could run the session (credentials in its memory).
   */
  const refused = () => {
    stillHeld(deps, sessionId).catch(() => false).then((held) => {
      if (held) {
        finish(1013, "try again later");
        return;
      }
      if (browser.readyState === WebSocket.OPEN) {
        browser.send(
          JSON.stringify({
            type: "error",
            code: "invalid_session",
            fatal: true,
          }),
        );
      }
      finish(4001, "invalid session");
    });
  };
  bindSocket(browser, log, "relayed media socket", "relay", broken, {
    message: (ev) => {
      if (done) return;
      const data = ev.data as unknown;
      // Counted before it is queued or passed on: a flood closes here, not at the holder.
      if (!gate.arrive(data)) {
        log.warn("relayed media socket closed for sending too fast", {
          session_id: sessionId,
        });
        finish(CLOSE_FLOODING, "sending too fast");
        return;
      }
      // The holder's gate, here first (DECISIONS 6): a relay is as exposed as a holder.
      const verdict = gate.check(data, browserRate);
      if (verdict.kind === "close") {
        finish(CLOSE_TOO_BIG, "frame too big");
        return;
      }
      if (verdict.kind === "drop") return;
      if (verdict.kind === "refuse") {
        if (verdict.answer && browser.readyState === WebSocket.OPEN) {
          browser.send(
            JSON.stringify({
              type: "error",
              code: "invalid_message",
              fatal: false,
            }),
          );
        }
        return;
      }
      if (
        verdict.kind === "message" && verdict.message.type === "audio.config"
      ) {
        browserRate = verdict.message.sample_rate;
      }
      const frame = data as string | ArrayBuffer;
      if (upstream.readyState === WebSocket.OPEN) {
        if (upstream.bufferedAmount > RELAY_MAX_BUFFERED_BYTES) {
          log.warn("relay holder too slow", { session_id: sessionId });
          finish(1013, "too slow");
          return;
        }
        upstream.send(frame);
        relayed.inc({ direction: "to_holder" }, sizeOf(frame));
        return;
      }
      const size = sizeOf(frame);
      if (pendingBytes + size <= RELAY_MAX_PENDING_BYTES) {
        pending.push(frame);
        pendingBytes += size;
      }
    },
    close: (ev) => finish(ev.code, ev.reason),
    error: () => {},
  });
  // A browser that left mid-handshake leaves a socket that never opens nor closes: its
  // upstream, a socket of the session on the holder, must not outlive it.
  void socketOpened(browser).then((ok) => {
    if (!ok) finish(1011, "never opened");
  });
  bindSocket(upstream, log, "relay upstream", "relay", broken, {
    open: () => {
      upstreamOpened = true;
      for (const data of pending.splice(0)) upstream.send(data);
      relayed.inc({ direction: "to_holder" }, pendingBytes);
      pendingBytes = 0;
    },
    message: (ev) => {
      if (browser.readyState !== WebSocket.OPEN) return;
      if (browser.bufferedAmount > RELAY_MAX_BUFFERED_BYTES) {
        // A browser this far behind gets a fresh start by reconnecting (takeover).
        log.warn("relayed media socket too slow", { session_id: sessionId });
        finish(1013, "too slow");
        return;
      }
      browser.send(ev.data as string | ArrayBuffer);
      relayed.inc(
        { direction: "to_browser" },
        sizeOf(ev.data as string | ArrayBuffer),
      );
    },
    close: (ev) => {
      if (!upstreamOpened && browser.readyState === WebSocket.OPEN) {
        refused();
        return;
      }
      finish(ev.code, ev.reason);
    },
    error: () => {
      if (upstream.readyState !== WebSocket.OPEN) {
        log.warn("media relay could not reach the holder", {
          session_id: sessionId,
        });
      }
    },
  });
}

const relays = new WeakMap<
  AppDeps,
  Set<(code: number, reason: string) => void>
>();

/** The relays of `deps` still open; all are closed when the app closes. */
function openRelays(
  deps: AppDeps,
): Set<(code: number, reason: string) => void> {
  let set = relays.get(deps);
  if (!set) {
    const fresh = new Set<(code: number, reason: string) => void>();
    relays.set(deps, fresh);
    deps.onClose.push(() => {
      for (const finish of [...fresh]) finish(1001, "going away");
    });
    set = fresh;
  }
  return set;
}
