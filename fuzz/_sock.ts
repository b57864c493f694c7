/**
 * The socket fuzzer's browser side (./socket.ts, ./socket_cases.ts): a media socket it
 * drives and watches (pongs, the session's end), the fuzz tenant's target session, and
 * the waits that count a hang or a 5xx as a finding.
 */
import { addFinding, type FuzzReport } from "./_lib.ts";

/** How long anything the fuzzer waits for may take before it counts as a hang. */
export const DEADLINE_MS = 5000;

/** A browser socket the fuzzer drives. */
export class Sock {
  readonly ws: WebSocket;
  readonly opened: Promise<boolean>;
  closed = false;
  pongs = 0;
  ended = false;
  #wake: Array<() => void> = [];

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.binaryType = "arraybuffer";
    this.opened = new Promise((resolve) => {
      this.ws.onopen = () => resolve(true);
      this.ws.onerror = () => resolve(false);
      this.ws.onclose = () => {
        this.closed = true;
        resolve(false);
        this.#notify();
      };
    });
    this.ws.onmessage = (e) => {
      if (typeof e.data !== "string") return;
      try {
        const m = JSON.parse(e.data);
        if (m.type === "pong") this.pongs++;
        if (
          m.type === "session.ended" ||
          (m.type === "error" && m.code === "invalid_session")
        ) this.ended = true;
      } catch { /* the fuzzer judges liveness, not content */ }
      this.#notify();
    };
  }

  #notify(): void {
    for (const w of this.#wake.splice(0)) w();
  }

  get open(): boolean {
    return !this.closed && this.ws.readyState === WebSocket.OPEN;
  }

  send(data: string | Uint8Array): void {
    try {
      if (this.open) this.ws.send(data);
    } catch { /* closed under us: the next case reconnects */ }
  }

  /** Resolves true once `cond` holds, false after `ms` or when the socket closes. */
  async until(cond: () => boolean, ms = DEADLINE_MS): Promise<boolean> {
    const end = Date.now() + ms;
    while (!cond()) {
      if (this.closed || Date.now() > end) return cond();
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.max(1, end - Date.now()));
        this.#wake.push(() => (clearTimeout(t), r()));
      });
    }
    return true;
  }

  close(code?: number): void {
    try {
      this.ws.close(code);
    } catch { /* already closing */ }
  }
}

/** The fuzz tenant's live session and its current socket. */
export interface Target {
  key: string;
  engineUrl: string;
  sessionId: string;
  token: string;
  sock: Sock | null;
  transport: "websocket_fmp4" | "webrtc_sfu";
}

/** Waits for a socket to open or fail; a socket doing neither in time is a hang. */
export async function settle(s: Sock, report: FuzzReport, what: string) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const r = await Promise.race([
    s.opened,
    new Promise<"hang">((res) =>
      timer = setTimeout(() => res("hang"), DEADLINE_MS)
    ),
  ]);
  clearTimeout(timer);
  if (r === "hang") {
    report.hangs++;
    addFinding(report, `${what}: socket neither opened nor failed`);
    return false;
  }
  return r;
}

/** Counts a 5xx (other than 503) as a finding. */
export async function noteStatus(
  res: Response,
  report: FuzzReport,
  what: string,
) {
  await res.body?.cancel().catch(() => {});
  if (res.status >= 500 && res.status !== 503) {
    report.fivexx++;
    addFinding(report, `${what}: HTTP ${res.status}`);
  }
}
