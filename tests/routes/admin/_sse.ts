/** Reads server-sent events from a streaming response, one event at a time. */

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

export class SseReader {
  #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";

  constructor(res: Response) {
    this.#reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next event with a name (comments and `retry:` lines are skipped); null at the end. */
  async next(): Promise<SseEvent | null> {
    while (true) {
      const i = this.#buffer.indexOf("\n\n");
      if (i >= 0) {
        const block = this.#buffer.slice(0, i);
        this.#buffer = this.#buffer.slice(i + 2);
        const ev: SseEvent = { event: "message", data: "" };
        let named = false;
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) {
            ev.event = line.slice(7);
            named = true;
          } else if (line.startsWith("data: ")) ev.data += line.slice(6);
          else if (line.startsWith("id: ")) ev.id = line.slice(4);
        }
        if (named) return ev;
        continue;
      }
      const { done, value } = await this.#reader.read();
      if (done) return null;
      this.#buffer += value;
    }
  }

  /** Reads events until `pred` holds for one; returns it (null if the stream ends). */
  async until(pred: (e: SseEvent) => boolean): Promise<SseEvent | null> {
    while (true) {
      const e = await this.next();
      if (e === null || pred(e)) return e;
    }
  }

  async close(): Promise<void> {
    await this.#reader.cancel();
  }
}
