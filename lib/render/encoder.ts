/**
 * One ffmpeg process per stream: raw I420 frames and s16le audio go in over two unix
 * sockets in a private temp dir (async on our side, so a dead or stuck encoder never
 * pins a thread), fragmented MP4 comes out on stdout and is split into the init segment
 * and moof+mdat segments. Every exit path kills the process and removes the temp dir.
 */
import { encoderArgs, type StreamFormat } from "./ffmpeg.ts";
import { BoxSplitter } from "./mp4_splitter.ts";

export interface EncoderEvents {
  onInit(init: Uint8Array): void;
  onSegment(segment: Uint8Array): void;
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

/** A write-only byte pipe into one accepted unix-socket connection. */
class SocketPipe {
  #queue: Uint8Array[] = [];
  #conn: Deno.UnixConn | null = null;
  #pumping = false;
  #ending = false;
  #closed = false;
  readonly accepted: Promise<void>;

  constructor(private readonly listener: Deno.UnixListener) {
    this.accepted = listener.accept().then((conn) => {
      this.#closeListener();
      if (this.#closed) {
        conn.close();
        return;
      }
      this.#conn = conn as Deno.UnixConn;
      void this.#pump();
    }, () => {});
  }

  get queued(): number {
    return this.#queue.length;
  }

  push(bytes: Uint8Array): void {
    if (this.#closed || this.#ending) return;
    this.#queue.push(bytes);
    void this.#pump();
  }

  /** Sends what is queued, then signals end of input. */
  end(): void {
    this.#ending = true;
    void this.#pump();
  }

  close(): void {
    this.#closed = true;
    this.#queue = [];
    this.#closeListener();
    try {
      this.#conn?.close();
    } catch {
      // already closed
    }
    this.#conn = null;
  }

  #closeListener(): void {
    try {
      this.listener.close();
    } catch {
      // already closed
    }
  }

  async #pump(): Promise<void> {
    if (this.#pumping || !this.#conn) return;
    this.#pumping = true;
    const conn = this.#conn;
    try {
      while (this.#queue.length > 0 && !this.#closed) {
        let buf = this.#queue[0];
        while (buf.length > 0) buf = buf.subarray(await conn.write(buf));
        this.#queue.shift();
      }
      if (this.#ending && !this.#closed) await conn.closeWrite();
    } catch {
      this.#queue = [];
    } finally {
      this.#pumping = false;
    }
  }
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

  /** Spawns ffmpeg; output and failures go to `events`. Throws when spawning fails. */
  constructor(options: EncoderOptions, private readonly events: EncoderEvents) {
    hookUnload();
    this.#maxQueued = options.maxQueuedFrames ?? 50;
    this.#dir = Deno.makeTempDirSync({ prefix: "avatar-render-" });
    this.socketDir = this.#dir;
    const vPath = `${this.#dir}/v.sock`;
    const aPath = `${this.#dir}/a.sock`;
    const listeners: Deno.UnixListener[] = [];
    try {
      listeners.push(Deno.listen({ transport: "unix", path: vPath }));
      listeners.push(Deno.listen({ transport: "unix", path: aPath }));
      this.#child = new Deno.Command(options.ffmpeg, {
        args: options.args
          ? options.args(vPath, aPath)
          : encoderArgs(options, vPath, aPath),
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
    // Once ffmpeg is connected the socket files are not needed: remove them at once so
    // a process killed hard leaves nothing behind in the temp dir.
    void Promise.all([this.#video.accepted, this.#audio.accepted]).then(() =>
      Deno.remove(this.#dir, { recursive: true }).catch(() => {})
    );
    live.add(this.#child);
    this.pid = this.#child.pid;
    this.#readers = Promise.all([
      options.args ? this.#drainStdout() : this.#readStdout(),
      this.#readStderr(),
    ]).then(
      () => {},
    );
    this.#exited = this.#child.status.then((status) => {
      live.delete(this.#child);
      this.#video.close();
      this.#audio.close();
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
   */
  write(frame: Uint8Array, audio: Uint8Array): boolean {
    if (this.#stopping) return true;
    if (this.#video.queued >= this.#maxQueued) return false;
    this.#video.push(frame);
    this.#audio.push(audio);
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
    await this.#exited;
    await this.#readers;
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

  async #readStdout(): Promise<void> {
    const splitter = new BoxSplitter({
      onInit: (b) => this.events.onInit(b),
      onSegment: (b) => this.events.onSegment(b),
    });
    try {
      for await (const chunk of this.#child.stdout) {
        if (this.#muted) continue;
        try {
          splitter.push(chunk);
        } catch (err) {
          this.#fail(err instanceof Error ? err : new Error(String(err)));
        }
      }
    } catch {
      // the pipe broke with the process; the exit handler reports it
    }
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
