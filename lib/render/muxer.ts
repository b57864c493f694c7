/**
 * The live fMP4 muxer of the socket transport: pairs each coded video frame with the
 * audio frames the encoder gave for the same input and sends them as one fragment at
 * once. The audio is AAC-LC or, for a WebCodecs client that asked for it, Opus
 * (DECISIONS 6).
 *
 * ffmpeg's own MP4 muxer closed a fragment only when the next frame reached it (one
 * frame, 40 ms, late) and let that frame through only once AAC at its time existed (two
 * more AAC frames): ~81 ms between a frame's write and its fragment
 * (docs/notes/performance-history.md). Here a frame waits only for the audio frames its
 * own write lets the encoder finish. ffmpeg reads raw PCM in blocks of `PCM_BLOCK`
 * samples, so after `w` samples in all the encoder has been given
 * `b = floor(w / 1024) * 1024` of them. AAC codes 1024-sample blocks and holds one back:
 * it has given `b / 1024 - 1` frames, the first of them the priming frame, dropped here
 * so the audio track's time 0 is the first input sample, level with the first video
 * frame. libopus codes each 960-sample frame as it is complete: `floor(b / 960)`
 * packets (measured through ffmpeg: tests/lib/render/opus_encoder_test.ts), nothing to
 * drop; its delay (the pre-skip, 120 samples in low-delay mode) is declared in `dOps`
 * instead. Should the audio be late (another ffmpeg), the frame leaves after
 * `AUDIO_WAIT_MS` with what there is and the rest rides with the next one; timestamps
 * come from counts, so nothing shifts.
 */
import type { FlvVideoFrame } from "./es_readers.ts";
import { type AdtsFormat, audioSpecificConfig } from "./es_readers.ts";
import {
  type AudioConfig,
  initSegment,
  mediaFragment,
  type Sample,
} from "./fmp4_writer.ts";
import { OPUS_RATE } from "./mp4_entries.ts";
import { type OpusHead, opusPacketSamples } from "./nut_opus.ts";
import { AAC_RATES } from "../../client/webcodecs/fmp4.ts";

/** Longest a coded frame waits for the audio of its own write (ms). */
export const AUDIO_WAIT_MS = 15;
/** Samples in each packet of raw PCM ffmpeg's demuxer hands its encoder. */
export const PCM_BLOCK = 1024;
/** Samples per AAC-LC frame. */
const AAC_FRAME = 1024;
/** Samples per Opus packet (the encoder codes 20-ms frames at 48 kHz). */
export const OPUS_FRAME = 960;
/** Written frames whose expected audio count is remembered (the encoder's queue bound). */
const MAX_EXPECTED = 256;

export interface MuxerOptions {
  width: number;
  height: number;
  fps: number;
  /** The audio codec: AAC-LC (the default) or Opus. */
  audioCodec?: "aac" | "opus";
  /** The audio stream's rate (Hz): what the encoder is given and codes (Opus: 48000). */
  audioRate: number;
  /** The AAC bit rate (bit/s), for the init segment's esds. */
  audioBitRate: number;
  onInit(init: Uint8Array): void;
  /** A fragment; `video`: it carries a frame (not only the audio before a keyframe). */
  onSegment(segment: Uint8Array, video: boolean): void;
}

/** How many coded audio frames the encoder has given after `written` input samples. */
export function expectedAudioFrames(
  codec: "aac" | "opus",
  written: number,
): number {
  const given = Math.floor(written / PCM_BLOCK) * PCM_BLOCK;
  return codec === "opus"
    ? Math.floor(given / OPUS_FRAME)
    : given / AAC_FRAME - 1;
}

export class LiveMuxer {
  readonly videoTimescale: number;
  readonly #codec: "aac" | "opus";
  /** Samples per audio frame, and frames dropped at the start as priming. */
  readonly #frame: number;
  readonly #priming: number;
  #avcC: Uint8Array | null = null;
  #audioConfig: AudioConfig | null = null;
  #initSent = false;
  #sequence = 0;
  /** Coded frames not yet sent, oldest first. */
  #video: FlvVideoFrame[] = [];
  /** Audio frames not yet sent, and the audio time of the first of them. */
  #audio: Sample[] = [];
  #audioTime = 0;
  /** Audio frames received in all (AAC's priming one included). */
  #audioCount = 0;
  /** Audio samples written in all, and per written frame the audio count it lets out. */
  #written = 0;
  #expected: number[] = [];
  #expectedBase = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #waitingFor = -1;
  #closed = false;

  constructor(private readonly o: MuxerOptions) {
    this.videoTimescale = o.fps * 512;
    this.#codec = o.audioCodec ?? "aac";
    if (this.#codec === "opus" && o.audioRate !== OPUS_RATE) {
      throw new Error("Opus is coded at 48 kHz");
    }
    this.#frame = this.#codec === "opus" ? OPUS_FRAME : AAC_FRAME;
    this.#priming = this.#codec === "opus" ? 0 : 1;
  }

  /** A frame and `samples` of its audio were written to the encoder. */
  wrote(samples: number): void {
    this.#written += samples;
    this.#expected.push(expectedAudioFrames(this.#codec, this.#written));
    if (this.#expected.length > MAX_EXPECTED) {
      this.#expected.shift();
      this.#expectedBase++;
    }
  }

  onConfig(avcC: Uint8Array): void {
    this.#avcC = avcC;
    this.#maybeInit();
  }

  onVideo(frame: FlvVideoFrame): void {
    if (this.#closed) return;
    this.#video.push(frame);
    this.#flush(false);
  }

  /** An AAC frame (from ADTS). */
  onAudio(frame: Uint8Array, format: AdtsFormat): void {
    if (this.#codec !== "aac") throw new Error("AAC from an Opus encoder");
    if (AAC_RATES[format.sampleRateIndex] !== this.o.audioRate) {
      throw new Error("encoder audio is not at the configured rate");
    }
    if (this.#closed) return;
    this.#audioConfig ??= {
      sampleRate: this.o.audioRate,
      channels: format.channels,
      asc: audioSpecificConfig(format),
      bitRate: this.o.audioBitRate,
    };
    this.#received(frame);
  }

  /** The Opus stream's header (before its first packet). */
  onOpusHead(head: OpusHead): void {
    if (this.#codec !== "opus") throw new Error("Opus from an AAC encoder");
    if (this.#closed) return;
    this.#audioConfig ??= {
      codec: "opus",
      channels: head.channels,
      preSkip: head.preSkip,
      inputRate: head.inputRate,
    };
    this.#maybeInit();
  }

  /** An Opus packet: 20 ms, as the encoder was told to code. */
  onOpusPacket(packet: Uint8Array): void {
    if (this.#codec !== "opus" || !this.#audioConfig) {
      throw new Error("Opus packet without an Opus header");
    }
    if (opusPacketSamples(packet) !== OPUS_FRAME) {
      throw new Error("encoder audio is not in 20-ms Opus packets");
    }
    if (this.#closed) return;
    this.#received(packet);
  }

  #received(frame: Uint8Array): void {
    // AAC's first frame is the encoder's priming (its 1024-sample delay): not played.
    if (this.#audioCount++ < this.#priming) {
      this.#maybeInit();
      return;
    }
    this.#audio.push({ data: frame, duration: this.#frame });
    this.#flush(false);
  }

  /** Both outputs ended: what is left leaves now (audio a frame's worth at a time). */
  end(): void {
    if (this.#closed) return;
    this.#flush(true);
    const perFrame = Math.ceil(this.o.audioRate / this.o.fps / this.#frame);
    while (this.#initSent && this.#audio.length > 0) {
      this.#send(null, this.#audio.splice(0, perFrame));
    }
    this.close();
  }

  /** Nothing more goes out (what waits is dropped). */
  close(): void {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #maybeInit(): void {
    if (this.#initSent || !this.#avcC || !this.#audioConfig) return;
    this.#initSent = true;
    this.o.onInit(initSegment(
      {
        width: this.o.width,
        height: this.o.height,
        timescale: this.videoTimescale,
        avcC: this.#avcC,
      },
      this.#audioConfig,
    ));
    this.#flush(false);
  }

  /** The frame index of a coded frame (from its FLV time). */
  #index(frame: FlvVideoFrame): number {
    return Math.round(frame.timeMs * this.o.fps / 1000);
  }

  #flush(force: boolean): void {
    if (!this.#initSent) return;
    while (this.#video.length > 0) {
      const frame = this.#video[0];
      const index = this.#index(frame);
      const need = this.#expected[index - this.#expectedBase] ?? 0;
      if (!force && this.#audioCount < need && this.#waitingFor !== index) {
        this.#wait(index);
        return;
      }
      if (!force && this.#audioCount < need) return; // the timer sends it
      this.#video.shift();
      this.#emit(frame);
    }
  }

  #wait(index: number): void {
    this.#waitingFor = index;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      const frame = this.#video[0];
      if (frame && this.#index(frame) === index) {
        this.#video.shift();
        this.#emit(frame);
      }
      this.#flush(false);
    }, AUDIO_WAIT_MS);
  }

  #emit(frame: FlvVideoFrame): void {
    if (this.#timer !== null && this.#index(frame) === this.#waitingFor) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    const duration = 512;
    const time = this.#index(frame) * duration;
    if (frame.key) {
      // A keyframe starts a GOP, where a takeover's socket starts: the audio from before
      // it leaves first on its own, so this fragment's tracks both start at the frame.
      const before = this.#audioFramesBefore(time / this.videoTimescale);
      if (before > 0) this.#send(null, this.#audio.splice(0, before));
    }
    // The audio up to the next frame's time: in real time that is all there is; when
    // frames come in a burst (a catch-up) each takes its own share, not the backlog.
    const next = (this.#index(frame) + 1) / this.o.fps;
    const audio = this.#audio.splice(0, this.#audioFramesBefore(next));
    this.#send({ data: frame.data, duration, time, key: frame.key }, audio);
  }

  /** How many pending audio frames start before `seconds`. */
  #audioFramesBefore(seconds: number): number {
    const limit = seconds * this.o.audioRate;
    let n = 0;
    while (
      n < this.#audio.length && this.#audioTime + n * this.#frame < limit
    ) n++;
    return n;
  }

  #send(
    video: (Sample & { time: number; key: boolean }) | null,
    audio: Sample[],
  ): void {
    this.o.onSegment(
      mediaFragment({
        sequence: ++this.#sequence,
        video,
        audio,
        audioTime: this.#audioTime,
      }),
      video !== null,
    );
    this.#audioTime += audio.length * this.#frame;
  }
}
