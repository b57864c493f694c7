/**
 * The built-in renderer: draws the avatar in-process at a fixed frame rate, paced by the
 * wall clock, and encodes it with one ffmpeg per session (./stream.ts), started at
 * `open` (warm before the socket asks) and kept across attaches: a takeover gets the
 * cached init segment and the current GOP at once, never a new encoder. The render loop
 * runs from `open` to `stop`, taking one frame's worth of agent audio per tick (silence
 * when none is queued), so the mouth and the audio track stay in step and a stream's
 * timestamps have no holes; with no viewer attached, frames are not encoded.
 */
import { alphaOf, findAvatar, findBackground } from "../avatars.ts";
import type { Logger } from "../log.ts";
import { BuiltinSession } from "./builtin_session.ts";
import { ffmpegPath } from "./ffmpeg.ts";
import { realClock, type RenderClock } from "./pacing.ts";
import {
  cartoonPainter,
  isThreadPainter,
  type Painter,
  type PainterSource,
  type ThreadPainter,
} from "./painter.ts";
import {
  type RenderBackend,
  type RenderOpenOptions,
  type RenderSession,
  RenderStartError,
} from "../ports/render.ts";
export { planTicks, realClock, type RenderClock } from "./pacing.ts";

export interface BuiltinOptions {
  /**
   * Painters of avatars the catalog does not hold (tenants' photo avatars), asked
   * first; set at wiring.
   */
  painters?: PainterSource;
  /** Frame size of every cartoon session; by default each avatar's own (`AvatarDef.size`). */
  width?: number;
  height?: number;
  fps?: number;
  clock?: RenderClock;
  /** ffmpeg executable; defaults to `ffmpegPath()`. */
  ffmpeg?: string;
  /** Frames produced at once when the loop wakes late before it rebases its clock. */
  maxCatchUpFrames?: number;
  /** Bench only: stamp the wall clock into every drawn frame (./clock_stamp.ts). */
  clockStamp?: boolean;
  /** Wall clock (epoch ms) of the RTP output's speech events; `Date.now` by default. */
  wallNow?: () => number;
  /**
   * Hears each agent-audio push's latency to the fMP4 fragment that carries it (ms):
   * the app's metrics.
   */
  onAudioLatency?: (ms: number) => void;
  /** Hears each frame streamed: whether its picture was painted for it (the metrics). */
  onFrame?: (painted: boolean) => void;
}

/** The deps the built-in renderer uses (a subset of AppDeps). */
export interface RendererDeps {
  log: Logger;
  onClose: Array<() => void | Promise<void>>;
}

/**
 * The in-process renderer. Open sessions are force-stopped when the app closes
 * (registered on `deps.onClose`); `close()` does the same on demand.
 */
export function createBuiltinRenderer(
  deps: RendererDeps,
  options: BuiltinOptions = {},
): RenderBackend & { close(): Promise<void> } {
  const open = new Set<BuiltinSession>();
  const opts = {
    fps: options.fps ?? 25,
    clock: options.clock ?? realClock,
    maxCatchUpFrames: options.maxCatchUpFrames ?? 25,
    clockStamp: options.clockStamp ?? false,
    wallNow: options.wallNow ?? Date.now,
    onAudioLatency: options.onAudioLatency,
    onFrame: options.onFrame,
  };
  const close = async () => {
    await Promise.all(
      [...open].map((s) => s.stop({ graceful: false, timeoutMs: 0 })),
    );
  };
  deps.onClose.push(close);
  const openPainter = async (
    o: RenderOpenOptions,
  ): Promise<Painter | ThreadPainter> => {
    const photo = await options.painters?.(o);
    if (photo) return photo;
    const avatar = findAvatar(o.avatarId);
    const bg = findBackground(o.bgId);
    if (!avatar || !bg) {
      throw new RenderStartError(
        "misconfigured",
        "unknown avatar or background",
      );
    }
    const size = avatar.size;
    return cartoonPainter(
      avatar,
      bg,
      options.width ?? size,
      options.height ?? size,
    );
  };
  return {
    async open(o: RenderOpenOptions): Promise<RenderSession> {
      const painter = await openPainter(o);
      let ffmpeg: string;
      try {
        // (A painter on another thread paints the alpha there, when asked to.)
        const alpha = isThreadPainter(painter)
          ? painter.alpha
          : painter.paintAlpha !== undefined;
        if (alphaOf(o.bgId) && !alpha) {
          throw new RenderStartError(
            "misconfigured",
            "this avatar cannot be drawn on a transparent background",
          );
        }
        ffmpeg = options.ffmpeg ?? await ffmpegPath().catch((err) => {
          deps.log.error("ffmpeg not available", { err });
          throw new RenderStartError("failed", "the encoder is not available");
        });
      } catch (err) {
        if (isThreadPainter(painter)) painter.close();
        throw err;
      }
      const session: BuiltinSession = new BuiltinSession(
        painter,
        ffmpeg,
        opts,
        deps.log,
        () => open.delete(session),
        o.output !== "rtp",
        alphaOf(o.bgId) !== null,
      );
      if (!session.running) {
        await session.stop({ graceful: false, timeoutMs: 0 });
        throw new RenderStartError("failed", "the encoder failed to start");
      }
      open.add(session);
      return session;
    },
    close,
  };
}
