/**
 * The RTP output of a render session (DECISIONS 11): one ffmpeg for the session's life
 * encoding H.264 baseline (`packetization-mode=1`, pt 96, SPS/PPS before every keyframe,
 * a keyframe every second; every frame in the first 0.5 s, every 4th until 2 s) and Opus (pt 111) and
 * sending each as RTP (`-f rtp`, SRTP when the mountpoint has a key) to an SFU
 * mountpoint's ingest ports. It sits beside
 * the fMP4 output: the same frames and audio, another encoder.
 */
import { Encoder } from "./encoder.ts";
import {
  h264Args,
  OPUS_CODEC_ARGS,
  rawInputArgs,
  type StreamFormat,
} from "./ffmpeg.ts";

/** Where the RTP goes: an SFU mountpoint's ingest (lib/ports/sfu.ts `Mountpoint`). */
export interface RtpTarget {
  host: string;
  videoPort: number;
  audioPort: number;
  /** SRTP master key and salt (base64, `AES_CM_128_HMAC_SHA1_80`); absent: plain RTP. */
  srtp?: string;
}

/** The SRTP suite of the ingest (the mountpoint's `srtpsuite: 80`). */
const SRTP_SUITE = "AES_CM_128_HMAC_SHA1_80";

/** Payload types the mountpoint expects (lib/sfu/janus.ts). */
export const RTP_VIDEO_PT = 96;
export const RTP_AUDIO_PT = 111;
/** RTP packets stay below a typical path MTU once SRTP and ICE are added. */
const RTP_PACKET_SIZE = 1200;

/** ffmpeg arguments: raw I420 + s16le mono in (two unix sockets), two RTP streams out. */
export function rtpEncoderArgs(
  fmt: StreamFormat,
  videoSocket: string,
  audioSocket: string,
  target: RtpTarget,
): string[] {
  const gop = String(fmt.fps);
  const host = target.host.includes(":") ? `[${target.host}]` : target.host;
  const rtp = (port: number) => [
    ...(target.srtp
      ? ["-srtp_out_suite", SRTP_SUITE, "-srtp_out_params", target.srtp]
      : []),
    `${target.srtp ? "srtp" : "rtp"}://${host}:${port}?rtcpport=${
      port + 1
    }&pkt_size=${RTP_PACKET_SIZE}`,
  ];
  return [
    ...rawInputArgs(fmt, videoSocket, audioSocket),
    "-map",
    "0:v:0",
    // Every frame a keyframe for the first 0.5 s, then every 4th until 2 s: the first
    // viewer's PeerConnection comes up while the stream starts, and one that missed the
    // first keyframe (Janus's `bufferkf` holding none yet) waited a whole GOP, 1 s.
    ...h264Args(
      fmt,
      `expr:if(lt(n,${fmt.fps / 2}),1,if(lt(n,${
        2 * fmt.fps
      }),eq(mod(n,4),0),eq(mod(n,${gop}),0)))`,
      "1500k",
    ),
    "-level",
    "3.1",
    // Janus has no sprop-parameter-sets: SPS/PPS go in band before every keyframe.
    "-x264-params",
    "repeat-headers=1",
    "-payload_type",
    String(RTP_VIDEO_PT),
    "-f",
    "rtp",
    ...rtp(target.videoPort),
    "-map",
    "1:a:0",
    ...OPUS_CODEC_ARGS,
    "-ar",
    "48000",
    "-payload_type",
    String(RTP_AUDIO_PT),
    "-f",
    "rtp",
    ...rtp(target.audioPort),
  ];
}

/**
 * Recent writes remembered for `wallMsAt`: more than the encoder may hold queued
 * (./encoder.ts `maxQueuedFrames`, 50) so that a frame it takes late is still known.
 */
const MAX_WRITES = 64;

/**
 * RTP encoder failures in a rolling minute that are restarted; one more ends the
 * session (as `MAX_STREAM_RESTARTS` of lib/media/restarts.ts for the fMP4 stream).
 */
export const MAX_RTP_RESTARTS = 3;

/**
 * The session's RTP output: fed every rendered frame until stopped. Its encoder can be
 * replaced after a failure (`restart`); its timeline (`samples`, `wallMsAt`) goes on.
 */
export class RtpOutput {
  #encoder: Encoder;
  /** Stops of replaced encoders, awaited by `stop`. */
  readonly #retiring = new Set<Promise<unknown>>();
  /** When the encoder was restarted (ms), the last minute's. */
  #restarts: number[] = [];
  /** Audio samples written so far (the RTP output's own timeline, at `sampleRate`). */
  samples = 0;
  /** The end of the audio the encoder has taken (its frames read), in `samples`. */
  takenSamples = 0;
  /** Called when the encoder has taken a frame (`takenSamples` moved). */
  onTaken: () => void = () => {};
  /**
   * Recent writes: the sample positions each covers, the wall clock at its write and
   * when the encoder took it (null until then), and its `runOffset`.
   */
  #writes: Array<{
    pos: number;
    end: number;
    at: number;
    taken: number | null;
    runOffset: number | null;
  }> = [];

  /**
   * Spawns ffmpeg; throws when spawning fails. `onFailure` reports a dead encoder;
   * `wallNow` is the wall clock (epoch ms) that `wallMsAt` answers in.
   */
  constructor(
    private readonly ffmpeg: string,
    private readonly fmt: StreamFormat,
    private readonly target: RtpTarget,
    private readonly onFailure: (err: Error) => void,
    private readonly wallNow: () => number = Date.now,
  ) {
    this.#encoder = this.#spawn();
  }

  #spawn(): Encoder {
    const encoder: Encoder = new Encoder({
      ffmpeg: this.ffmpeg,
      ...this.fmt,
      args: (v, a) => rtpEncoderArgs(this.fmt, v, a, this.target),
    }, {
      onInit: () => {},
      onSegment: () => {},
      // A replaced encoder's late report is not the output's.
      onFailure: (err) => {
        if (this.#encoder === encoder) this.onFailure(err);
      },
    });
    return encoder;
  }

  /**
   * After a failure at `now` (ms): kills the current encoder and spawns another toward
   * the same target (new SSRC and sequence; the mountpoint takes them). False, doing
   * nothing, past `MAX_RTP_RESTARTS` in a minute; throws when spawning fails (the
   * output then stays failed).
   */
  restart(now: number): boolean {
    this.#restarts = this.#restarts.filter((t) => now - t < 60_000);
    if (this.#restarts.length >= MAX_RTP_RESTARTS) return false;
    this.#restarts.push(now);
    const stopping = this.#encoder.stop({ graceful: false, timeoutMs: 0 });
    this.#retiring.add(stopping);
    void stopping.finally(() => this.#retiring.delete(stopping));
    this.#encoder = this.#spawn();
    return true;
  }

  get pid(): number {
    return this.#encoder.pid;
  }

  /**
   * One frame and its audio; false when the encoder fell behind (a failure).
   * `runOffset` is kept with the frame's positions (`runOffsetAt`): where a watched
   * fMP4 run of the same session stood against this output (./speech_routes.ts).
   */
  write(
    frame: Uint8Array,
    audio: Uint8Array,
    runOffset: number | null = null,
  ): boolean {
    if (this.#writes.length >= MAX_WRITES) this.#writes.shift();
    const w = {
      pos: this.samples,
      end: this.samples + (audio.byteLength >> 1),
      at: this.wallNow(),
      taken: null as number | null,
      runOffset,
    };
    this.#writes.push(w);
    this.samples = w.end;
    return this.#encoder.write(frame, audio, () => {
      w.taken = this.wallNow();
      // A replaced encoder's frames are never taken: the next one's move past them.
      this.takenSamples = Math.max(this.takenSamples, w.end);
      this.onTaken();
    });
  }

  /**
   * The wall clock (epoch ms) at which audio sample `pos` went into the encoder: when
   * the encoder took the frame that carried it (its write, if it never did), plus the
   * sample's offset in that frame's audio. A backlog at the encoder (ffmpeg behind a
   * burst of frames, under load) delays the audio by as much: counted from the take,
   * the time is the audio's, not the backlog's. Positions older than the writes
   * remembered are counted back from the oldest at real time.
   */
  wallMsAt(pos: number): number {
    const w = this.#writeAt(pos);
    const at = w ? w.taken ?? w.at : this.wallNow();
    const from = w ? w.pos : this.samples;
    return Math.round(at + ((pos - from) * 1000) / this.fmt.sampleRate);
  }

  /** The `runOffset` of the write that carried sample `pos` (null: none known). */
  runOffsetAt(pos: number): number | null {
    return this.#writeAt(pos)?.runOffset ?? null;
  }

  #writeAt(pos: number) {
    let w = this.#writes[0];
    for (const x of this.#writes) {
      if (x.pos > pos) break;
      w = x;
    }
    return w;
  }

  /** Stops the encoder; resolves once it and every replaced one is reaped. */
  async stop(options: { graceful: boolean; timeoutMs: number }): Promise<
    { clean: boolean }
  > {
    const stopped = await this.#encoder.stop(options);
    await Promise.all([...this.#retiring]);
    return stopped;
  }
}
