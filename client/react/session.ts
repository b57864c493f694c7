/**
 * `useAvatarSession`: the browser player (`@live-avatar/browser`) as a React hook. Your
 * callbacks reach your backend (which holds the API key): one creates a session and
 * answers its media token, one refreshes the token; the hook answers the session's
 * state, captions, speaking, errors and the viewer's stats as React state.
 */
// @ts-types="@types/react"
import { useCallback, useEffect, useRef, useState } from "react";
import type { RefObject } from "react";
import {
  AvatarPlayer,
  type AvatarPlayerOptions,
  type CaptionDetail,
  type EndedDetail,
  type ErrorDetail,
  type FreshToken,
  type PlayerState,
  type PlayerStats,
} from "@live-avatar/browser";

/** What your backend hands the page for a new session (never the API key). */
export interface AvatarSessionGrant {
  session_id: string;
  client_token: string;
  /** The token's expiry (epoch ms). */
  expires_at?: number;
  /** The service's media socket base, e.g. `wss://avatar.example.com`. */
  ws_base_url: string;
  /** The session's `transport` from create. */
  transport?: AvatarPlayerOptions["transport"];
  /** `stream_metadata.ice_servers` from create (WebRTC sessions). */
  ice_servers?: AvatarPlayerOptions["iceServers"];
}

/** The player's own options that the hook passes through (decoder, microphone, …). */
export type AvatarPlayerTuning = Omit<
  AvatarPlayerOptions,
  | "sessionId"
  | "token"
  | "expiresAt"
  | "wsBaseUrl"
  | "video"
  | "canvas"
  | "refreshToken"
  | "transport"
  | "iceServers"
>;

export interface UseAvatarSessionOptions {
  /** Asks your backend to create a session; called by `start()`. */
  createSession: () => Promise<AvatarSessionGrant>;
  /** Asks your backend for a fresh media token of `sessionId`. */
  refreshToken: (sessionId: string) => Promise<FreshToken>;
  /** Asks your backend to end `sessionId`; called by `stop()` (optional). */
  endSession?: (sessionId: string) => Promise<unknown>;
  /** Passed to the player as they are. */
  player?: AvatarPlayerTuning;
  /** Captions kept, newest last (default 50). */
  captionLimit?: number;
  /** How often `stats` is refreshed, ms (default 1000; 0: never). */
  statsIntervalMs?: number;
}

export interface AvatarSession {
  /** Give these to the `<video>` and `<canvas>` the avatar plays in (`AvatarView` does). */
  videoRef: RefObject<HTMLVideoElement>;
  canvasRef: RefObject<HTMLCanvasElement>;
  sessionId: string | null;
  state: PlayerState;
  /** The session's status as the media socket last reported it. */
  status: string | null;
  /** Whether the avatar is audibly speaking at what the viewer sees now. */
  speaking: boolean;
  /** Captions as they are heard, newest last. */
  captions: CaptionDetail[];
  /** The last error (fatal or not), until the next `start()`. */
  error: ErrorDetail | null;
  /** Set once the session ended, with its status and reason. */
  ended: EndedDetail | null;
  /** What this viewer experiences (the figures the player reports as `client.stats`). */
  stats: PlayerStats | null;
  muted: boolean;
  /**
   * Creates a session (your `createSession`) and connects; rejects when either fails.
   * Resolves without connecting when `stop()` came or the component unmounted
   * meanwhile (that session is ended through your `endSession`).
   */
  start(): Promise<void>;
  /** Disconnects, and ends the session through your `endSession` when given. */
  stop(): Promise<void>;
  setMuted(muted: boolean): void;
  /** The player, while connected (sendText, interrupt, play). */
  player: AvatarPlayer | null;
}

/** A live avatar session bound to a component's life: closed when it unmounts. */
export function useAvatarSession(
  options: UseAvatarSessionOptions,
): AvatarSession {
  const videoRef = useRef<HTMLVideoElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  // The latest callbacks, so a re-render with new closures needs no reconnect.
  const opts = useRef(options);
  opts.current = options;
  const [player, setPlayer] = useState<AvatarPlayer | null>(null);
  const [sessionId, setSessionId] = useState<string | null>(null);
  const [state, setState] = useState<PlayerState>("idle");
  const [status, setStatus] = useState<string | null>(null);
  const [speaking, setSpeaking] = useState(false);
  const [captions, setCaptions] = useState<CaptionDetail[]>([]);
  const [error, setError] = useState<ErrorDetail | null>(null);
  const [ended, setEnded] = useState<EndedDetail | null>(null);
  const [stats, setStats] = useState<PlayerStats | null>(null);
  const [muted, setMutedState] = useState(false);
  const mutedNow = useRef(false);
  const live = useRef<{ player: AvatarPlayer; id: string } | null>(null);
  /** Bumped by each start, stop and unmount: a start whose number moved is void. */
  const generation = useRef(0);
  /** A start is waiting for your backend. */
  const starting = useRef(false);
  const mounted = useRef(false);

  const start = useCallback(async () => {
    // A player that ended or closed by itself gives way to the new session.
    if (live.current && isOver(live.current.player.state)) {
      live.current.player.close();
      live.current = null;
    }
    if (live.current || starting.current) {
      throw new Error("the session is already started");
    }
    const video = videoRef.current;
    if (!video) throw new Error("videoRef is not attached to a <video>");
    const o = opts.current;
    const mine = ++generation.current;
    starting.current = true;
    setError(null);
    setEnded(null);
    setCaptions([]);
    let grant: AvatarSessionGrant;
    try {
      grant = await o.createSession();
    } finally {
      if (generation.current === mine) starting.current = false;
    }
    // Stopped or unmounted while your backend answered (and maybe mounted again, as
    // React's StrictMode does, with a start of its own): this session is not needed.
    if (generation.current !== mine || !mounted.current) {
      await o.endSession?.(grant.session_id);
      return;
    }
    const p = new AvatarPlayer({
      ...o.player,
      sessionId: grant.session_id,
      token: grant.client_token,
      expiresAt: grant.expires_at,
      wsBaseUrl: grant.ws_base_url,
      transport: grant.transport,
      iceServers: grant.ice_servers,
      video,
      canvas: canvasRef.current ?? undefined,
      refreshToken: () => opts.current.refreshToken(grant.session_id),
    });
    live.current = { player: p, id: grant.session_id };
    const limit = o.captionLimit ?? 50;
    p.on("state", (d) => (setState(d.state), setStatus(d.status)));
    p.on("speaking", (d) => setSpeaking(d.speaking));
    p.on("caption", (d) => setCaptions((c) => [...c, d].slice(-limit)));
    p.on("error", (d) => setError(d));
    p.on("ended", (d) => setEnded(d));
    if (mutedNow.current) p.mute();
    setSessionId(grant.session_id);
    setPlayer(p);
    try {
      await p.connect();
    } catch (err) {
      if (live.current?.player === p) live.current = null;
      setPlayer(null);
      throw err;
    }
  }, []);

  const stop = useCallback(async () => {
    generation.current++;
    starting.current = false;
    const l = live.current;
    live.current = null;
    if (!l) return;
    l.player.close();
    setPlayer(null);
    setSpeaking(false);
    await opts.current.endSession?.(l.id);
  }, []);

  const setMuted = useCallback((m: boolean) => {
    const p = live.current?.player;
    if (p && m) p.mute();
    else if (p) p.unmute();
    mutedNow.current = m;
    setMutedState(m);
  }, []);

  // The viewer's figures, refreshed while connected.
  useEffect(() => {
    const every = options.statsIntervalMs ?? 1000;
    if (!player || every <= 0) return;
    const t = setInterval(() => setStats(player.stats), every);
    return () => clearInterval(t);
  }, [player, options.statsIntervalMs]);

  // Unmounting closes the player (the session itself ends through your backend or
  // the service's idle timeout), and voids a start still waiting for your backend.
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
      generation.current++;
      starting.current = false;
      live.current?.player.close();
      live.current = null;
    };
  }, []);

  return {
    videoRef,
    canvasRef,
    sessionId,
    state,
    status,
    speaking,
    captions,
    error,
    ended,
    stats,
    muted,
    start,
    stop,
    setMuted,
    player,
  };
}

function isOver(state: PlayerState): boolean {
  return state === "ended" || state === "closed";
}
