/**
 * WebRTC signalling of a `webrtc_sfu` session over its media socket (DECISIONS 11),
 * proxied to the SFU. Each socket gets its own SFU viewer: the server sends
 * `webrtc.offer`, the browser answers `webrtc.answer`, ICE candidates go either way as
 * `webrtc.candidate`. A takeover opens a viewer for the new socket and closes the old
 * one; a viewer the SFU drops under a live socket is replaced (a new offer, at most 3 a
 * minute); the browser never sees an SFU token, pin or URL beyond the ICE/DTLS endpoint.
 * When a viewer drops or cannot be opened because the SFU lost the session's mountpoint
 * (it restarted) or stopped answering for `SFU_RECOVERY_MS`, the session ends
 * (./recovery.ts); an SFU back within that bound with the mountpoint gets a new viewer.
 */
import type { AppDeps } from "../deps.ts";
import type { Logger } from "../log.ts";
import {
  mountpointOf,
  setViewerState,
  type ViewerState,
} from "../sfu/mountpoints.ts";
import type { ClientMessage, ServerMessage } from "./protocol.ts";
import type { RenderSession, SpeechEvent } from "../ports/render.ts";

type WebrtcClientMessage = Extract<
  ClientMessage,
  { type: "webrtc.answer" | "webrtc.candidate" }
>;
import type {
  IceCandidate,
  Mountpoint,
  SfuPort,
  Viewer,
} from "../ports/sfu.ts";
import {
  type CandidatePolicy,
  screenAnswerSdp,
  screenCandidate,
  strictPolicy,
} from "../sfu/candidates.ts";
import {
  awaitMountpoint,
  checkMountpoint,
  type MountpointCheck,
  SFU_RECOVERY_MS,
} from "../sfu/recovery.ts";

/** New viewers offered a minute after the SFU dropped one, and the pause before each. */
const MAX_RETRIES = 3;
const RETRY_DELAY_MS = 500;
/** SFU candidates held until the offer went out. */
const MAX_HELD_CANDIDATES = 32;

export interface SfuLinkHooks {
  /** Sends a message on `ws` when it is still open. */
  send(ws: WebSocket, msg: ServerMessage): void;
  /** The current socket's viewer has media flowing (DTLS up). */
  onFlowing(): void;
  /**
   * The current socket's viewer could not be set up or was dropped by the SFU, which
   * still holds the mountpoint (a browser's problem, or too many drops): not fatal.
   */
  onViewerFailed(reason: string): void;
  /**
   * The SFU lost the mountpoint (it restarted) or did not answer for `SFU_RECOVERY_MS`:
   * the session's avatar cannot be shown again.
   */
  onLost(reason: string): void;
  /** The viewer's state changed (for the console). */
  onState?(state: ViewerState): void;
}

/** The SFU side of one live session: its mountpoint and the current socket's viewer. */
export class SfuLink {
  #viewer: Viewer | null = null;
  #ws: WebSocket | null = null;
  /** Bumped on every attach/detach: an older watch that resolves late is closed. */
  #generation = 0;
  #closed = false;
  /** Browser candidates that came before the viewer existed. */
  #early: Array<IceCandidate | null> = [];
  /** When the SFU dropped a viewer under a live socket (ms, newest last). */
  #drops: number[] = [];
  /** Set while waiting for an SFU that stopped answering; aborted by `close`. */
  #recovery: AbortController | null = null;

  constructor(
    readonly sfu: SfuPort,
    readonly mountpoint: Mountpoint,
    private readonly log: Logger,
    private readonly sessionId: string,
    private readonly hooks: SfuLinkHooks,
    /** Which browser candidates may reach the SFU (./candidates.ts). */
    private readonly policy: CandidatePolicy = strictPolicy(mountpoint),
  ) {}

  /** Opens a viewer for `ws` (the session's socket now) and sends it the SFU's offer. */
  attach(ws: WebSocket): void {
    if (this.#closed) return;
    this.#dropViewer();
    this.#ws = ws;
    const gen = ++this.#generation;
    // Offered a viewer once the SFU is back (`#recover`).
    if (this.#recovery) return;
    this.hooks.onState?.("negotiating");
    const current = () => gen === this.#generation && !this.#closed;
    // The SFU trickles its candidates (full trickle): the browser gets them after the
    // offer, even when the SFU reports some before the watch has resolved.
    let offered = false;
    const held: IceCandidate[] = [];
    this.sfu.watch(this.mountpoint.id, {
      onCandidate: (candidate) => {
        if (!current()) return;
        if (offered) {
          this.hooks.send(ws, { type: "webrtc.candidate", candidate });
        } else if (held.length < MAX_HELD_CANDIDATES) held.push(candidate);
      },
      onMediaFlowing: () => {
        if (!current()) return;
        this.hooks.onState?.("flowing");
        this.hooks.onFlowing();
      },
      onClosed: (reason) => {
        if (!current()) return;
        this.#viewer = null;
        this.log.warn("sfu viewer closed", {
          session_id: this.sessionId,
          reason,
        });
        void this.#viewerLost(ws, gen, `sfu viewer closed (${reason})`, true);
      },
    }, AbortSignal.timeout(10_000)).then((viewer) => {
      if (!current()) {
        void viewer.close();
        return;
      }
      this.#viewer = viewer;
      this.hooks.send(ws, { type: "webrtc.offer", sdp: viewer.offer });
      offered = true;
      for (const candidate of held.splice(0)) {
        this.hooks.send(ws, { type: "webrtc.candidate", candidate });
      }
    }, (err) => {
      if (!current()) return;
      this.log.warn("sfu watch failed", { session_id: this.sessionId, err });
      void this.#viewerLost(ws, gen, "the SFU refused the viewer", false);
    });
  }

  /**
   * `ws`'s viewer (of generation `gen`) dropped or could not be opened. The SFU still
   * holding the mountpoint: a dropped one is replaced (`retry`, up to `MAX_RETRIES` a
   * minute), else the socket hears of it (not fatal). The SFU without it, or silent:
   * `#recover`.
   */
  async #viewerLost(
    ws: WebSocket,
    gen: number,
    reason: string,
    retry: boolean,
  ): Promise<void> {
    const found = await checkMountpoint(this.sfu, this.mountpoint.id);
    if (this.#closed) return;
    if (found !== "held") return await this.#recover(found);
    const current = () =>
      gen === this.#generation && !this.#closed && this.#ws === ws;
    if (!current()) return;
    if (!retry || !this.#mayRetry()) {
      this.hooks.onViewerFailed(reason);
      return;
    }
    // The SFU dropped the viewer under a live socket: offer it a new one.
    setTimeout(() => {
      if (current()) this.attach(ws);
    }, RETRY_DELAY_MS);
  }

  /**
   * The SFU no longer holds the mountpoint (`gone`) or does not answer: an SFU back with
   * it within `SFU_RECOVERY_MS` offers the current socket a new viewer; else `onLost`.
   */
  async #recover(first: Exclude<MountpointCheck, "held">): Promise<void> {
    if (this.#recovery || this.#closed) return;
    const ac = this.#recovery = new AbortController();
    this.#generation++;
    this.#dropViewer();
    this.hooks.onState?.("none");
    this.log.warn("sfu: the session's mountpoint is not reachable", {
      session_id: this.sessionId,
      found: first,
    });
    const found = first === "gone" ? first : await awaitMountpoint(
      this.sfu,
      this.mountpoint.id,
      SFU_RECOVERY_MS,
      ac.signal,
    );
    this.#recovery = null;
    if (this.#closed) return;
    if (found === "held") {
      this.log.info("sfu: the session's mountpoint is reachable again", {
        session_id: this.sessionId,
      });
      if (this.#ws) this.attach(this.#ws);
      return;
    }
    this.hooks.onLost(
      found === "gone"
        ? "the SFU no longer holds the session's mountpoint"
        : `the SFU did not answer for ${SFU_RECOVERY_MS / 1000} s`,
    );
  }

  /**
   * Starts the session's RTP output toward the mountpoint (for its whole life);
   * `onFailed` when the renderer cannot publish RTP or its RTP output failed for good
   * (the renderer restarts a failed encoder itself, ../render/rtp.ts); `onSpeech`
   * gets the speech events of the audio it sends (lib/ports/render.ts `RtpSink`).
   */
  publish(
    render: RenderSession,
    onFailed: (reason: string) => void,
    onSpeech: (event: SpeechEvent) => void,
  ): void {
    if (!render.publishRtp) {
      onFailed("the renderer cannot publish to the SFU");
      return;
    }
    render.publishRtp(this.mountpoint, {
      onError: (err) => {
        this.log.error("render rtp error", { session_id: this.sessionId, err });
        onFailed("the renderer's RTP output failed");
      },
      onSpeech,
    });
  }

  /**
   * A browser's `webrtc.answer` or `webrtc.candidate` on `ws` (schema-checked), its
   * candidates screened first (./candidates.ts): a dropped one is not passed on.
   */
  handle(ws: WebSocket, msg: WebrtcClientMessage): Promise<void> {
    if (msg.type === "webrtc.answer") {
      return this.answer(ws, screenAnswerSdp(msg.sdp, this.policy));
    }
    if (!screenCandidate(msg.candidate, this.policy)) return Promise.resolve();
    return this.candidate(ws, msg.candidate);
  }

  /** The browser's answer on `ws`. */
  async answer(ws: WebSocket, sdp: string): Promise<void> {
    const viewer = this.#viewer;
    if (ws !== this.#ws || !viewer) return;
    const gen = this.#generation;
    try {
      await viewer.answer(sdp, AbortSignal.timeout(10_000));
      for (const c of this.#early.splice(0)) await viewer.trickle(c);
    } catch (err) {
      if (gen !== this.#generation) return;
      this.log.warn("sfu answer refused", { session_id: this.sessionId, err });
      this.hooks.onViewerFailed("the SFU refused the answer");
    }
  }

  /** One browser ICE candidate (null: the end of them) on `ws`. */
  async candidate(ws: WebSocket, c: IceCandidate | null): Promise<void> {
    if (ws !== this.#ws) return;
    const viewer = this.#viewer;
    if (!viewer) {
      if (this.#early.length < 32) this.#early.push(c);
      return;
    }
    await viewer.trickle(c).catch((err) =>
      this.log.warn("sfu trickle failed", { session_id: this.sessionId, err })
    );
  }

  /** `ws` went away: its viewer is closed (no-op when a newer socket took over). */
  detach(ws: WebSocket): void {
    if (ws !== this.#ws) return;
    this.#ws = null;
    this.#generation++;
    this.#dropViewer();
    this.hooks.onState?.("none");
  }

  /** Closes the viewer for good (session teardown). The mountpoint is not ours to end. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#generation++;
    this.#recovery?.abort();
    const viewer = this.#viewer;
    this.#viewer = null;
    await viewer?.close().catch(() => {});
  }

  /** Up to `MAX_RETRIES` new viewers a minute after the SFU dropped one. */
  #mayRetry(): boolean {
    const now = performance.now();
    this.#drops = this.#drops.filter((t) => now - t < 60_000);
    this.#drops.push(now);
    return this.#drops.length <= MAX_RETRIES;
  }

  #dropViewer(): void {
    const viewer = this.#viewer;
    this.#viewer = null;
    this.#early = [];
    if (viewer) void viewer.close().catch(() => {});
  }
}

/**
 * The SFU link of `sessionId` on this instance, or null when this instance holds no
 * mountpoint for it (no SFU, or the process that made it is gone).
 */
export function sfuLinkFor(
  deps: AppDeps,
  sessionId: string,
  hooks: SfuLinkHooks,
): SfuLink | null {
  const mp = mountpointOf(deps, sessionId);
  if (!deps.sfu || !mp) return null;
  return new SfuLink(deps.sfu, mp, deps.log, sessionId, {
    onState: (state) => void setViewerState(deps, sessionId, state),
    ...hooks,
  }, {
    ...strictPolicy(mp),
    allowPrivate: deps.config.allowPrivateNetworkTargets,
  });
}
