/**
 * One ffmpeg process per stream: raw I420 frames and s16le audio go in over two unix
 * sockets in a private temp dir (async on our side, so a dead or stuck encoder never
 * pins a thread). For the socket transport the coded H.264 comes back as FLV on stdout
 * and the audio on a third socket (AAC as ADTS, or Opus in NUT), and the service muxes
 * them into the init segment and moof+mdat segments itself (./muxer.ts: each frame
 * leaves as soon as it is coded). Every exit path kills the process and removes the
 * temp dir.
 */
import {
  AAC_BIT_RATE,
  AAC_RATE,
  encoderArgs,
  OPUS_BIT_RATE,
  type StreamFormat,
} from "./ffmpeg.ts";
import { AdtsReader, FlvVideoReader } from "./es_readers.ts";
import { OPUS_RATE } from "./mp4_entries.ts";
import { LiveMuxer } from "./muxer.ts";
import { NutOpusReader } from "./nut_opus.ts";
import { acceptOnce, SocketPipe } from "./socket_pipe.ts";
import { Upsampler2x } from "./upsample.ts";

export interface EncoderEvents {
  onInit(init: Uint8Array): void;
  /** A fragment; `video`: it carries a frame (not only the audio before a keyframe). */
  onSegment(segment: Uint8Array, video: boolean): void;
  /** The encoder died or produced unusable output without being asked to stop. */
  onFailure(err: Error): void;
}

export interface EncoderOptions extends StreamFormat {
  ffmpeg: string;
  /** Frames that may wait for the encoder before `write` reports a stall. */
  maxQueuedFrames?: number;
  /**
   * Another output than fMP4 on stdout (e.g. RTP, ./rtp.ts): ffmpeg's arguments for the
   * two input sockets. stdout is then read and dropped; `onInit`/`onSegment` never fire.
   */
  args?: (videoSocket: string, audioSocket: string) => string[];
  /**
   * The fMP4 stream's audio codec: AAC-LC (the default, what MediaSource plays) or Opus
   * (for a WebCodecs client that asked for it, DECISIONS 6; needs 48-kHz input).
   */
  audio?: "aac" | "opus";
}

const live = new Set<Deno.ChildProcess>();
let unloadHooked = false;

function hookUnload(): void {
  if (unloadHooked) return;
  unloadHooked = true;
  globalThis.addEventListener("unload", () => {
    for (const child of live) {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
  });
}

/** Pids of the encoder processes this module started and has not yet reaped. */
export function liveEncoderPids(): number[] {
  return [...live].map((c) => c.pid);
}

/** A running ffmpeg encoding one stream. */
export class Encoder {
  readonly pid: number;
  /** The private dir holding the input sockets (removed once ffmpeg connected). */
  readonly socketDir: string;
  #child: Deno.ChildProcess;
  #dir: string;
  #video: SocketPipe;
  #audio: SocketPipe;
  #stopping = false;
  /** Set once output must no longer reach the events (failure, forced stop). */
  #muted = false;
  #stopped: Promise<{ clean: boolean }> | null = null;
  #exited: Promise<Deno.CommandStatus>;
  #readers: Promise<void>;
  #stderrTail = "";
  #maxQueued: number;
  /** The fMP4 path: the muxer, the audio output socket and (AAC) the 2× upsampler. */
  #mux: LiveMuxer | null = null;
  #codec: "aac" | "opus";
  #audioOut: Promise<Deno.Conn | null> = Promise.resolve(null);
  #outListener: Deno.UnixListener | null = null;
  #upsampler = new Upsampler2x();
  #ended = 0;

  /** Spawns ffmpeg; output and failures go to `events`. Throws when spawning fails. */
  constructor(options: EncoderOptions, private readonly events: EncoderEvents) {
    hookUnload();
    this.#codec = options.audio ?? "aac";
    if (this.#codec === "opus" && options.sampleRate !== OPUS_RATE) {
      throw new Error("Opus needs the stream's audio at 48 kHz");
    }
    this.#maxQueued = options.maxQueuedFrames ?? 50;
    this.#dir = Deno.makeTempDirSync({ prefix: "avatar-render-" });
    this.socketDir = this.#dir;
    const vPath = `${this.#dir}/v.sock`;
    const aPath = `${this.#dir}/a.sock`;
    const outPath = `${this.#dir}/out.sock`;
    const listeners: Deno.UnixListener[] = [];
    try {
      listeners.push(Deno.listen({ transport: "unix", path: vPath }));
      listeners.push(Deno.listen({ transport: "unix", path: aPath }));
      if (!options.args) {
        listeners.push(Deno.listen({ transport: "unix", path: outPath }));
      }
      this.#child = new Deno.Command(options.ffmpeg, {
        args: options.args
          ? options.args(vPath, aPath)
          : encoderArgs(options, vPath, aPath, outPath, this.#codec),
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
    } catch (err) {
      for (const l of listeners) l.close();
      Deno.removeSync(this.#dir, { recursive: true });
      throw err;
    }
    this.#video = new SocketPipe(listeners[0]);
    this.#audio = new SocketPipe(listeners[1]);
    if (!options.args) {
      this.#mux = new LiveMuxer({
        width: options.width,
        height: options.height,
        fps: options.fps,
        audioCodec: this.#codec,
        audioRate: this.#codec === "opus" ? OPUS_RATE : AAC_RATE,
        audioBitRate: this.#codec === "opus" ? OPUS_BIT_RATE : AAC_BIT_RATE,
        onInit: (b) => {
          if (!this.#muted) this.events.onInit(b);
        },
        onSegment: (b, video) => {
          if (!this.#muted) this.events.onSegment(b, video);
        },
      });
      this.#outListener = listeners[2];
      this.#audioOut = acceptOnce(listeners[2]);
    }
    // Once ffmpeg is connected the socket files are not needed: remove them at once so
    // a process killed hard leaves nothing behind in the temp dir.
    void Promise.all([
      this.#video.accepted,
      this.#audio.accepted,
      this.#audioOut,
    ]).then(() => Deno.remove(this.#dir, { recursive: true }).catch(() => {}));
    live.add(this.#child);
    this.pid = this.#child.pid;
    this.#readers = Promise.all([
      options.args ? this.#drainStdout() : this.#readStdout(),
      this.#readAudioOut(),
      this.#readStderr(),
    ]).then(
      () => {},
    );
    this.#exited = this.#child.status.then((status) => {
      live.delete(this.#child);
      this.#video.close();
      this.#audio.close();
      this.#closeOutListener();
      if (!this.#stopping) {
        this.#stopping = true;
        this.#muted = true;
        const why = status.signal ?? `code ${status.code}`;
        const detail = this.#stderrTail.trim().split("\n").pop() ?? "";
        this.events.onFailure(
          new Error(`encoder exited (${why})${detail ? `: ${detail}` : ""}`),
        );
      }
      return status;
    });
  }

  /**
   * Queues one video frame and its audio. Returns false when the encoder has fallen
   * more than `maxQueuedFrames` behind (the caller treats that as a failure).
   * `taken`: called once ffmpeg has read the frame (its audio is read alongside).
   */
  write(frame: Uint8Array, audio: Uint8Array, taken?: () => void): boolean {
    if (this.#stopping) return true;
    if (this.#video.queued >= this.#maxQueued) return false;
    this.#video.push(frame, taken);
    if (this.#mux && this.#codec === "opus") {
      // Opus codes the stream's own 48 kHz: its delay (2.5 ms) is far inside a frame.
      this.#audio.push(audio);
      this.#mux.wrote(audio.length >> 1);
    } else if (this.#mux) {
      // The AAC is coded at twice the stream's rate: its two-frame delay then fits
      // inside one video frame (./ffmpeg.ts AAC_RATE).
      const pcm = new Int16Array(audio.length >> 1);
      new Uint8Array(pcm.buffer).set(audio.subarray(0, pcm.length * 2));
      const up = this.#upsampler.process(pcm);
      this.#audio.push(new Uint8Array(up.buffer));
      this.#mux.wrote(up.length);
    } else this.#audio.push(audio);
    return true;
  }

  /**
   * Stops the encoder. Graceful: end both inputs so ffmpeg flushes the last fragment,
   * killing it if it has not exited within `timeoutMs` (then `clean` is false). Forced:
   * kill at once. Idempotent; resolves once the process is reaped and the dir removed.
   */
  stop(options: { graceful: boolean; timeoutMs: number }): Promise<
    { clean: boolean }
  > {
    this.#stopped ??= this.#stop(options);
    return this.#stopped;
  }

  async #stop(
    options: { graceful: boolean; timeoutMs: number },
  ): Promise<{ clean: boolean }> {
    const wasRunning = !this.#stopping;
    this.#stopping = true;
    if (!options.graceful) this.#muted = true;
    let clean = true;
    if (options.graceful && wasRunning) {
      this.#video.end();
      this.#audio.end();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = await Promise.race([
        this.#exited.then(() => false),
        new Promise<boolean>((r) => {
          timer = setTimeout(() => r(true), options.timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (timedOut) clean = false;
    }
    this.#kill();
    this.#video.close();
    this.#audio.close();
    this.#closeOutListener();
    await this.#exited;
    // The readers end at ffmpeg's EOF, having taken every byte it wrote (a graceful
    // stop's last fragment included); only then is the audio socket closed.
    await this.#readers;
    this.#closeAudioOut();
    await Promise.all([this.#video.accepted, this.#audio.accepted]);
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
    return { clean };
  }

  #kill(): void {
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // already exited
    }
  }

  #fail(err: Error): void {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#muted = true;
    this.#kill();
    this.events.onFailure(err);
  }

  /** The coded video (FLV on stdout) into the muxer. */
  async #readStdout(): Promise<void> {
    const mux = this.#mux!;
    const flv = new FlvVideoReader({
      onConfig: (avcC) => mux.onConfig(avcC),
      onFrame: (f) => mux.onVideo(f),
    });
    try {
      for await (const chunk of this.#child.stdout) {
        if (this.#muted) continue;
        this.#guard(() => flv.push(chunk));
      }
    } catch {
      // the pipe broke with the process; the exit handler reports it
    }
    this.#outputEnded();
  }

  /** The coded audio (ADTS or NUT on its socket) into the muxer. */
  async #readAudioOut(): Promise<void> {
    const conn = await this.#audioOut;
    if (!conn) return;
    const mux = this.#mux!;
    const reader = this.#codec === "opus"
      ? new NutOpusReader({
        onHead: (head) => mux.onOpusHead(head),
        onPacket: (packet) => mux.onOpusPacket(packet),
      })
      : new AdtsReader((frame, format) => mux.onAudio(frame, format));
    try {
      for await (const chunk of conn.readable) {
        if (this.#muted) continue;
        this.#guard(() => reader.push(chunk));
      }
    } catch {
      // the socket broke with the process; the exit handler reports it
    }
    this.#outputEnded();
  }

  /** Runs a parse step; bytes that are not what ffmpeg writes fail the encoder. */
  #guard(step: () => void): void {
    try {
      step();
    } catch (err) {
      this.#fail(err instanceof Error ? err : new Error(String(err)));
    }
  }

  /** Once both coded outputs ended (ffmpeg flushed), the muxer sends what is left. */
  #outputEnded(): void {
    if (++this.#ended < 2) return;
    if (!this.#muted) this.#guard(() => this.#mux?.end());
    this.#mux?.close();
  }

  /** Ends a wait for ffmpeg's audio connection that will never come. */
  #closeOutListener(): void {
    try {
      this.#outListener?.close();
    } catch {
      // already closed
    }
  }

  #closeAudioOut(): void {
    this.#closeOutListener();
    this.#mux?.close();
    void this.#audioOut.then((c) => {
      try {
        c?.close();
      } catch {
        // already closed with its stream
      }
    });
  }

  async #drainStdout(): Promise<void> {
    try {
      for await (const _ of this.#child.stdout) { /* not ours to read */ }
    } catch {
      // the pipe broke with the process
    }
  }

  async #readStderr(): Promise<void> {
    const dec = new TextDecoder();
    try {
      for await (const chunk of this.#child.stderr) {
        this.#stderrTail = (this.#stderrTail + dec.decode(chunk)).slice(-2048);
      }
    } catch {
      // the pipe broke with the process
    }
  }
}
