/**
 * WebCodecs playback of the socket's fMP4 stream (`websocket_fmp4`): each binary frame
 * demuxed (./fmp4.ts), H.264 decoded by a `VideoDecoder` tuned for latency and the audio
 * (Opus once asked for, else AAC) by the audio decoder port (./audio_decoder.ts:
 * `AudioDecoder`, or a WebAssembly Opus decoder where that cannot be read), played by a worklet with a small
 * jitter buffer (./audio_out.ts) whose clock the video follows: each decoded frame is
 * drawn on a canvas once the heard media time reaches its timestamp (late frames are
 * skipped). No MediaSource start buffer, where MSE loses a quarter of a second.
 */
import { AudioOut, NO_AUDIO_STATS } from "./audio_out.ts";
import type { WebCodecsStats } from "./stats.ts";
import { ArrivalWait } from "../arrival_wait.ts";
import { type Fmp4Track, parseInitSegment, parseMediaSegment } from "./fmp4.ts";
import { dueFrame, type FrameSink, SizedSink } from "./frames.ts";
import { videoConfig } from "./support.ts";
import { OPUS_FRAME } from "./opus.ts";
import type { AudioFrameDecoder, MakeAudioDecoder } from "./audio_decoder.ts";

export type { FrameSink };
export { asBufferStats, NO_WEBCODECS, type WebCodecsStats } from "./stats.ts";

export interface WebCodecsOptions {
  /** Where frames are drawn (made for the stream's picture size). */
  sink: (width: number, height: number) => FrameSink;
  /** Makes the decoder of a stream's audio track (./support.ts `audioDecoders`). */
  audioDecoder: MakeAudioDecoder;
  /** Reports a stream this browser cannot decode, or a decode error. */
  onError: (code: string, message: string) => void;
  /** The first frame of a stream is on the canvas. */
  onFirstFrame?: () => void;
  /** Audio queued past the jitter target that makes playback jump to live (ms). */
  slackMs?: number;
  workletUrl?: string;
}

/** Decoded frames waiting for their time, at most (about 2 s at 25 fps). */
const MAX_FRAMES = 50;

/** One stream at a time (each socket sends its own init segment) onto one canvas. */
export class WebCodecsPlayback {
  readonly #o: WebCodecsOptions;
  readonly #stats = {
    streams: 0,
    segments: 0,
    framesDecoded: 0,
    framesDrawn: 0,
    framesSkipped: 0,
  };
  #audio: AudioOut | null = null;
  /** A video frame's duration (ms), from the first one seen. */
  #frameMs = 0;
  /** The stream's audio track (its output opens after the first frame is drawn). */
  #audioTrack: Fmp4Track | null = null;
  /** Decoded audio waiting for the output to open. */
  #pendingPcm: Array<{ pcm: Float32Array; ptsUs: number }> = [];
  #tracks: Fmp4Track[] = [];
  #video: VideoDecoder | null = null;
  #audioDec: AudioFrameDecoder | null = null;
  #frames: VideoFrame[] = [];
  readonly #sink: SizedSink;
  #needInit = false;
  /** This stream's audio is decoded only if it is Opus (`reset`). */
  #holdAudio = false;
  #needKey = true;
  #drewFirst = false;
  #raf = 0;
  #closed = false;
  /** Where the newest decoded audio ends (µs). */
  #audioEndUs = 0;
  #shownUs: number | null = null;
  readonly #wait = new ArrivalWait();

  constructor(o: WebCodecsOptions) {
    this.#o = o;
    this.#sink = new SizedSink(o.sink, (m) => o.onError("media_error", m));
  }

  get stats(): WebCodecsStats {
    const a = this.#audio?.stats ?? NO_AUDIO_STATS;
    const clock = this.mediaTimeMs;
    return {
      ...this.#stats,
      ...a,
      audioCodec: this.#audioTrack?.codec ?? null,
      clockMs: clock === null ? null : Math.round(clock),
      shownMs: this.#shownUs === null ? null : Math.round(this.#shownUs / 1000),
      latencyMs: clock === null
        ? 0
        : Math.max(0, Math.round(this.#audioEndUs / 1000 - clock)),
      arrivalWaitMs: this.#wait.ms,
    };
  }

  /** The media time heard and shown now (ms of the stream's timeline), or null. */
  get mediaTimeMs(): number | null {
    const us = this.#audioClockUs();
    if (us !== null) return us / 1000;
    // No audio clock: the picture runs live, and its time is the clock.
    return this.#audioRuns() || this.#shownUs === null
      ? null
      : this.#shownUs / 1000;
  }

  /** Whether audio output exists and is not held (suspended by the autoplay policy). */
  #audioRuns(): boolean {
    return this.#audio !== null && this.#audio.ctx.state === "running";
  }

  /** The heard media time (µs) while the audio output runs, else null. */
  #audioClockUs(): number | null {
    return this.#audioRuns() ? this.#audio!.mediaTimeUs : null;
  }

  /** Whether decoded media is waiting or playing (a paused page has something to start). */
  get hasMedia(): boolean {
    return this.#drewFirst;
  }

  /**
   * `media.init`: the next binary frame is a new stream's init segment. `holdAudio`:
   * its audio is not decoded unless it is Opus (another stream, in Opus, was asked for).
   */
  reset(holdAudio = false): void {
    this.#dropStream();
    this.#needInit = true;
    this.#holdAudio = holdAudio;
  }

  /** One binary frame of the socket: the init segment after `reset`, else a segment. */
  append(data: ArrayBuffer): void {
    if (this.#closed) return;
    const bytes = new Uint8Array(data);
    try {
      if (this.#needInit) {
        this.#needInit = false;
        this.#start(bytes);
      } else if (this.#tracks.length > 0) {
        this.#stats.segments++;
        this.#feed(bytes);
      }
    } catch (err) {
      this.#o.onError("media_error", errorText(err));
    }
  }

  /** Starts (resumes) audio output; after a user gesture when autoplay was refused. */
  async play(): Promise<void> {
    await this.#audio?.resume();
  }

  /** Whether the audio output is held by the autoplay policy. */
  get suspended(): boolean {
    return this.#audio?.ctx.state === "suspended";
  }

  close(): void {
    this.#closed = true;
    this.#dropStream();
    cancelAnimationFrame(this.#raf);
    this.#audio?.close();
    this.#audio = null;
    this.#sink.close();
  }

  #start(init: Uint8Array): void {
    this.#tracks = parseInitSegment(init);
    const video = this.#tracks.find((t) => t.kind === "video");
    const audio = this.#tracks.find((t) =>
      t.kind === "audio" && (!this.#holdAudio || t.codec === "opus")
    );
    if (!video) throw new Error("the stream has no video track");
    this.#stats.streams++;
    this.#needKey = true;
    this.#drewFirst = false;
    this.#audioEndUs = 0;
    this.#video = this.#videoDecoder(video);
    this.#pendingPcm = [];
    // No decoder: this browser cannot decode it (AAC in WebKit on GStreamer), no sound.
    const dec = audio ? this.#audioDecoder(audio) : null;
    this.#audioDec = dec;
    this.#audioTrack = dec && audio ? audio : null;
    const track = this.#audioTrack;
    if (track) {
      if (this.#audio && this.#audio.streamRate !== track.sampleRate) {
        this.#audio.close();
        this.#audio = null;
      }
      this.#audio?.reset(...this.#jitter(track));
    }
    this.#schedule();
  }

  /**
   * The jitter buffer: it starts at one video frame (audio comes a fragment, one frame,
   * at a time) and grows by one audio frame (AAC 1024 samples, Opus 960) on each
   * underrun; the slack.
   */
  #jitter(track: Fmp4Track): [number, number, number] {
    const frame = track.codec === "opus" ? OPUS_FRAME : 1024;
    const frameMs = frame / track.sampleRate * 1000;
    return [Math.max(frameMs, this.#frameMs), frameMs, this.#o.slackMs ?? 150];
  }

  /**
   * Opens the audio output, once the first frame is on the canvas: creating an
   * AudioContext blocks the page's main thread (~240 ms the first time in headless
   * Chromium), which would otherwise hold the first picture back. What was decoded
   * meanwhile is queued; the jitter buffer drops what is past its slack (live edge).
   */
  #openAudio(): void {
    const track = this.#audioTrack;
    if (this.#closed || this.#audio || !track) return;
    let audio: AudioOut;
    try {
      audio = new AudioOut(track.sampleRate, this.#o.workletUrl);
    } catch (err) {
      // No audio output (e.g. the browser's limit of audio contexts): the video
      // plays on, live, without sound.
      this.#audioTrack = null;
      this.#pendingPcm = [];
      this.#o.onError("media_error", errorText(err));
      return;
    }
    this.#audio = audio;
    audio.ready.catch((err) => {
      if (!this.#closed && this.#audio === audio) {
        this.#o.onError("media_error", errorText(err));
      }
    });
    audio.reset(...this.#jitter(track));
    for (const p of this.#pendingPcm.splice(0)) audio.push(p.pcm, p.ptsUs);
  }

  /**
   * A decoder for the stream's video; after a decode error it is replaced at the next
   * keyframe (the media goes on, only the frames up to it are lost).
   */
  #videoDecoder(track: Fmp4Track): VideoDecoder {
    const dec: VideoDecoder = new VideoDecoder({
      output: (f) => this.#onFrame(f),
      error: (e) => {
        if (this.#video !== dec) return;
        this.#video = null;
        this.#needKey = true;
        this.#decodeError(e);
      },
    });
    dec.configure(videoConfig(track));
    return dec;
  }

  /** A decoder for the stream's audio, or null when this browser has none for it. */
  #audioDecoder(track: Fmp4Track): AudioFrameDecoder | null {
    let dec: AudioFrameDecoder | null = null;
    dec = this.#o.audioDecoder(track, {
      pcm: (pcm, ptsUs, durationUs) => {
        if (this.#audioDec === dec) this.#onPcm(pcm, ptsUs, durationUs);
      },
      error: (message) => {
        if (this.#audioDec === dec && !this.#closed) {
          this.#o.onError("media_error", message);
        }
      },
    });
    return dec;
  }

  #feed(seg: Uint8Array): void {
    const samples = parseMediaSegment(seg, this.#tracks);
    // How long the newest audio that just landed waits to be heard.
    const clock = this.mediaTimeMs;
    let audioEndUs = -Infinity;
    for (const s of samples) {
      const t = this.#tracks.find((x) => x.trackId === s.trackId)!;
      if (t.kind === "video") {
        this.#frameMs ||= s.durationUs / 1000;
        if (this.#needKey && !s.key) continue;
        this.#needKey = false;
        this.#video ??= this.#videoDecoder(t);
        if (this.#video.state !== "configured") continue;
        this.#video.decode(
          new EncodedVideoChunk({
            type: s.key ? "key" : "delta",
            timestamp: s.ptsUs,
            duration: s.durationUs,
            data: s.data,
          }),
        );
      } else if (this.#audioDec) {
        audioEndUs = Math.max(audioEndUs, s.ptsUs + s.durationUs);
        this.#audioDec.decode(s.data, s.ptsUs, s.durationUs);
      }
    }
    if (clock !== null && audioEndUs > 0) {
      this.#wait.sample(audioEndUs / 1000 - clock);
    }
  }

  /** Decoded audio: to the output, or held until it opens. */
  #onPcm(pcm: Float32Array, ptsUs: number, durationUs: number): void {
    if (this.#closed) return;
    if (this.#audio) this.#audio.push(pcm, ptsUs);
    else if (this.#audioTrack) {
      this.#pendingPcm.push({ pcm, ptsUs });
      // About 2 s at most: the output drops what is past the live edge anyway.
      if (this.#pendingPcm.length > 96) this.#pendingPcm.shift();
    }
    this.#audioEndUs = ptsUs + durationUs;
  }

  #onFrame(f: VideoFrame): void {
    if (this.#closed) {
      f.close();
      return;
    }
    this.#stats.framesDecoded++;
    this.#frames.push(f);
    while (this.#frames.length > MAX_FRAMES) {
      this.#frames.shift()!.close();
      this.#stats.framesSkipped++;
    }
    if (!this.#drewFirst) this.#present();
  }

  #decodeError(e: DOMException): void {
    if (this.#closed) return;
    this.#o.onError(
      "media_error",
      `The browser could not decode: ${e.message}`,
    );
  }

  #schedule(): void {
    cancelAnimationFrame(this.#raf);
    const loop = () => {
      if (this.#closed) return;
      this.#present();
      this.#raf = requestAnimationFrame(loop);
    };
    this.#raf = requestAnimationFrame(loop);
  }

  /** Draws the frame due on the audio clock (./frames.ts); closes those passed over. */
  #present(): void {
    const due = dueFrame(
      this.#frames,
      this.#audioClockUs(),
      !this.#drewFirst,
      this.#audioRuns(),
    );
    if (due < 0) return;
    for (let i = 0; i < due; i++) {
      this.#frames[i].close();
      this.#stats.framesSkipped++;
    }
    const frame = this.#frames[due];
    this.#frames = this.#frames.slice(due + 1);
    if (!this.#sink.draw(frame)) {
      frame.close();
      return;
    }
    this.#shownUs = frame.timestamp;
    frame.close();
    this.#stats.framesDrawn++;
    if (!this.#drewFirst) {
      this.#drewFirst = true;
      this.#o.onFirstFrame?.();
      if (!this.#audio && this.#audioTrack) {
        setTimeout(() => this.#openAudio(), 0);
      }
    }
  }

  #dropStream(): void {
    for (const f of this.#frames) f.close();
    this.#frames = [];
    if (this.#video && this.#video.state !== "closed") this.#video.close();
    this.#audioDec?.close();
    this.#video = null;
    this.#audioDec = null;
    this.#tracks = [];
    this.#wait.reset();
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
