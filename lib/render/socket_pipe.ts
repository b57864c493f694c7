/**
 * The unix-socket ends of an encoder (./encoder.ts): a write-only pipe into the one
 * connection ffmpeg makes to an input socket, and the one connection it makes to an
 * output socket. Async on our side, so a dead or stuck ffmpeg never pins a thread.
 */

/** A write-only byte pipe into one accepted unix-socket connection. */
export class SocketPipe {
  #queue: { bytes: Uint8Array; taken?: () => void }[] = [];
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

  /**
   * Queues `bytes`; `taken` is called once the reader has taken them all (the socket
   * accepted the last byte): never for bytes dropped by `close` or a failed write.
   */
  push(bytes: Uint8Array, taken?: () => void): void {
    if (this.#closed || this.#ending) return;
    this.#queue.push({ bytes, taken });
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
        let buf = this.#queue[0].bytes;
        while (buf.length > 0) buf = buf.subarray(await conn.write(buf));
        if (this.#closed) break;
        this.#queue.shift()?.taken?.();
      }
      if (this.#ending && !this.#closed) await conn.closeWrite();
    } catch {
      this.#queue = [];
    } finally {
      this.#pumping = false;
    }
  }
}

/** The first connection to `listener` (then closed), or null when none comes. */
export function acceptOnce(
  listener: Deno.UnixListener,
): Promise<Deno.Conn | null> {
  return listener.accept().then((conn) => conn, () => null).finally(() => {
    try {
      listener.close();
    } catch {
      // already closed
    }
  });
}
