/**
 * The components: `AvatarView` shows a session's avatar (a `<video>`, and the canvas
 * the player draws on for WebCodecs and transparent avatars); `LiveAvatar` is the whole
 * thing in one element — it starts a session when mounted and reports what happens
 * through its `on…` props.
 */
// @ts-types="@types/react"
import { createElement, useEffect, useRef } from "react";
import type { CSSProperties, ReactElement, ReactNode } from "react";
import type {
  CaptionDetail,
  EndedDetail,
  ErrorDetail,
  PlayerState,
  PlayerStats,
} from "@live-avatar/browser";
import {
  type AvatarSession,
  useAvatarSession,
  type UseAvatarSessionOptions,
} from "./session.ts";

export interface AvatarViewProps {
  session: AvatarSession;
  className?: string;
  style?: CSSProperties;
}

// No `display` here: the player hides one of the two with the `hidden` attribute.
const FILL: CSSProperties = { width: "100%", height: "100%" };

/** The avatar of `session`: its video, or the canvas the player draws on instead. */
export function AvatarView(props: AvatarViewProps): ReactElement {
  const { session } = props;
  return createElement(
    "div",
    {
      className: props.className,
      style: props.style,
      "data-avatar-state": session.state,
    },
    createElement("video", {
      ref: session.videoRef,
      autoPlay: true,
      playsInline: true,
      style: FILL,
    }),
    // The player shows it (and hides the video) once it draws there.
    createElement("canvas", {
      ref: session.canvasRef,
      hidden: true,
      className: "avatar-canvas",
      style: FILL,
    }),
  );
}

export interface LiveAvatarProps extends UseAvatarSessionOptions {
  /** Start when mounted (default true); otherwise call `start` from `children`. */
  autoStart?: boolean;
  className?: string;
  style?: CSSProperties;
  onState?: (state: PlayerState, status: string | null) => void;
  onCaption?: (caption: CaptionDetail) => void;
  onSpeaking?: (speaking: boolean) => void;
  onError?: (error: ErrorDetail) => void;
  onEnded?: (ended: EndedDetail) => void;
  onStats?: (stats: PlayerStats) => void;
  /** Controls drawn under the avatar (captions, buttons), given the session. */
  children?: (session: AvatarSession) => ReactNode;
}

/** A live avatar: creates its session when mounted, closes it when unmounted. */
export function LiveAvatar(props: LiveAvatarProps): ReactElement {
  const session = useAvatarSession(props);
  const on = useRef(props);
  on.current = props;
  const { state, status, speaking, captions, error, ended, stats } = session;

  useEffect(() => {
    if (props.autoStart === false) return;
    session.start().catch((err) =>
      on.current.onError?.({
        code: "connect_failed",
        fatal: true,
        message: err instanceof Error ? err.message : String(err),
      })
    );
    // Once, when mounted: a new session per mount.
  }, []);
  useEffect(() => on.current.onState?.(state, status), [state, status]);
  useEffect(() => on.current.onSpeaking?.(speaking), [speaking]);
  const last = captions[captions.length - 1];
  useEffect(() => {
    if (last) on.current.onCaption?.(last);
  }, [last]);
  useEffect(() => {
    if (error) on.current.onError?.(error);
  }, [error]);
  useEffect(() => {
    if (ended) on.current.onEnded?.(ended);
  }, [ended]);
  useEffect(() => {
    if (stats) on.current.onStats?.(stats);
  }, [stats]);

  return createElement(
    "div",
    { className: props.className, style: props.style },
    createElement(AvatarView, { session, style: { width: "100%" } }),
    props.children?.(session),
  );
}
