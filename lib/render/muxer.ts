/**
 * The live fMP4 muxer of the socket transport: pairs each coded video frame with the AAC
 * frames the encoder gave for the same input and sends them as one fragment at once.
 *
 * ffmpeg's own MP4 muxer closed a fragment only when the next frame reached it (one
 * frame, 40 ms, late) and let that frame through only once AAC at its time existed (two
 * more AAC frames): ~81 ms between a frame's write and its fragment
 * (docs/notes/performance-history.md). Here a frame waits only for the AAC frames its
 * own write lets the encoder finish: AAC codes 1024-sample blocks and holds one back, so
 * after `w` samples in all it has given `floor(w / 1024) - 1` frames (the first of them
 * the priming frame, dropped here so the audio track's time 0 is the first input
 * sample, level with the first video frame). Should they be late (another ffmpeg), the
 * frame leaves after `AUDIO_WAIT_MS` with what there is and the rest rides with the
 * next one; timestamps come from counts, so nothing shifts.
 */
import type { FlvVideoFrame } from "./es_readers.ts";
import { type AdtsFormat, audioSpecificConfig } from "./es_readers.ts";
import { initSegment, mediaFragment, type Sample } from "./fmp4_writer.ts";
import { AAC_RATES } from "../../client/webcodecs/fmp4.ts";

/** Longest a coded frame waits for the AAC of its own write (ms). */
export const AUDIO_WAIT_MS = 15;
/** Samples per AAC-LC frame. */
const AAC_FRAME = 1024;
/** Written frames whose expected AAC count is remembered (the encoder's queue bound). */
const MAX_EXPECTED = 256;

export interface MuxerOptions {
  width: number;
  height: number;
  fps: number;
  /** The AAC stream's rate (Hz): what the encoder is given and codes. */
  audioRate: number;
  /** The AAC bit rate (bit/s), for the init segment. */
  audioBitRate: number;
  onInit(init: Uint8Array): void;
  onSegment(segment: Uint8Array): void;
}

export class LiveMuxer {
  readonly videoTimescale: number;
  #avcC: Uint8Array | null = null;
  #audioFormat: AdtsFormat | null = null;
  #initSent = false;
  #sequence = 0;
  /** Coded frames not yet sent, oldest first. */
  #video: FlvVideoFrame[] = [];
  /** AAC frames not yet sent, and the audio time of the first of them. */
  #audio: Sample[] = [];
  #audioTime = 0;
  /** AAC frames received in all (the priming one included). */
  #aacCount = 0;
  /** Audio samples written in all, and per written frame the AAC count it lets out. */
  #written = 0;
  #expected: number[] = [];
  #expectedBase = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #waitingFor = -1;
  #closed = false;

  constructor(private readonly o: MuxerOptions) {
    this.videoTimescale = o.fps * 512;
  }

  /** A frame and `samples` of its audio were written to the encoder. */
  wrote(samples: number): void {
    this.#written += samples;
    this.#expected.push(Math.floor(this.#written / AAC_FRAME) - 1);
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

  onAudio(frame: Uint8Array, format: AdtsFormat): void {
    if (AAC_RATES[format.sampleRateIndex] !== this.o.audioRate) {
      throw new Error("encoder audio is not at the configured rate");
    }
    if (this.#closed) return;
    this.#audioFormat ??= format;
    // The first frame is the encoder's priming (its 1024-sample delay): not played.
    if (this.#aacCount++ === 0) {
      this.#maybeInit();
      return;
    }
    this.#audio.push({ data: frame, duration: AAC_FRAME });
    this.#flush(false);
  }

  /** Both outputs ended: what is left leaves now (audio a frame's worth at a time). */
  end(): void {
    if (this.#closed) return;
    this.#flush(true);
    const perFrame = Math.ceil(this.o.audioRate / this.o.fps / AAC_FRAME);
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
    if (this.#initSent || !this.#avcC || !this.#audioFormat) return;
    this.#initSent = true;
    this.o.onInit(initSegment(
      {
        width: this.o.width,
        height: this.o.height,
        timescale: this.videoTimescale,
        avcC: this.#avcC,
      },
      {
        sampleRate: this.o.audioRate,
        channels: this.#audioFormat.channels,
        asc: audioSpecificConfig(this.#audioFormat),
        bitRate: this.o.audioBitRate,
      },
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
      if (!force && this.#aacCount < need && this.#waitingFor !== index) {
        this.#wait(index);
        return;
      }
      if (!force && this.#aacCount < need) return; // the timer sends it
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
    // The AAC up to the next frame's time: in real time that is all there is; when
    // frames come in a burst (a catch-up) each takes its own share, not the backlog.
    const next = (this.#index(frame) + 1) / this.o.fps;
    const audio = this.#audio.splice(0, this.#audioFramesBefore(next));
    this.#send({ data: frame.data, duration, time, key: frame.key }, audio);
  }

  /** How many pending AAC frames start before `seconds`. */
  #audioFramesBefore(seconds: number): number {
    const limit = seconds * this.o.audioRate;
    let n = 0;
    while (
      n < this.#audio.length && this.#audioTime + n * AAC_FRAME < limit
    ) n++;
    return n;
  }

  #send(
    video: (Sample & { time: number; key: boolean }) | null,
    audio: Sample[],
  ): void {
    this.o.onSegment(mediaFragment({
      sequence: ++this.#sequence,
      video,
      audio,
      audioTime: this.#audioTime,
    }));
    this.#audioTime += audio.length * AAC_FRAME;
  }
}
