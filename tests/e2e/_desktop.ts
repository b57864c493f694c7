/**
 * What a browser under test needs from a desktop: a PulseAudio server of its own with a
 * null sink, whose monitor the test records to hear what the browser played, and (for
 * WebKitGTK's MiniBrowser, which has no headless mode) an Xvfb display. Each is the
 * test's own process, on a free display / its own socket, so browsers in parallel
 * tests never share one.
 */

/** A private PulseAudio server: `server` is what `PULSE_SERVER` takes. */
export interface Pulse {
  server: string;
  /** Starts recording what the browser plays (its null sink's monitor). */
  record(): Recording;
  /**
   * What the server has connected, for a failure's diagnosis: its clients and sink
   * inputs (a browser's streams: corked, muted, their volume), from `pactl`.
   */
  describe(): Promise<string>;
  stop(): Promise<void>;
}

export interface Recording {
  /**
   * The loudest 50-ms window recorded so far, as RMS of 16-bit samples (0 silence,
   * 328 is -40 dBFS).
   */
  peak(): number;
  /**
   * What the recorder did, for a failure's diagnosis: seconds recorded, whether it
   * still runs, the end of what it printed.
   */
  state(): { seconds: number; running: boolean; said: string };
  stop(): Promise<void>;
}

const RATE = 8000;

async function waitForFile(path: string, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await Deno.stat(path).then(() => true, () => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not start`);
}

/** Starts PulseAudio (Debian `pulseaudio`) with one null sink, `out`, as the default. */
export async function startPulse(): Promise<Pulse> {
  const dir = await Deno.makeTempDir({ prefix: "pulse-e2e-" });
  const socket = `${dir}/native`;
  const child = new Deno.Command("pulseaudio", {
    args: [
      "-n",
      "--daemonize=no",
      "--exit-idle-time=-1",
      "--disable-shm=yes",
      "--log-target=stderr",
      "-L",
      `module-native-protocol-unix socket=${socket} auth-anonymous=1`,
      "-L",
      "module-null-sink sink_name=out rate=48000",
      "-L",
      "module-always-sink",
    ],
    env: { HOME: dir, XDG_RUNTIME_DIR: dir, XDG_CONFIG_HOME: dir },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  await waitForFile(socket, "PulseAudio");
  const server = `unix:${socket}`;
  return {
    server,
    record: () => recordMonitor(server),
    describe: () => describePulse(server),
    async stop() {
      child.kill();
      await child.status;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

async function describePulse(server: string): Promise<string> {
  const out: string[] = [];
  for (const what of ["clients", "sink-inputs"]) {
    const r = await new Deno.Command("pactl", {
      args: [`--server=${server}`, "list", what],
      stdin: "null",
    }).output().catch((e) => ({ stdout: new TextEncoder().encode(String(e)) }));
    const text = new TextDecoder().decode(r.stdout);
    // The lines that tell a stream's state; the rest (channel maps, formats) is noise.
    out.push(
      `${what}: ` +
        text.split("\n").map((l) => l.trim()).filter((l) =>
          /^(Client|Sink Input|Corked|Mute|Volume|Sink:|application\.name|application\.process\.binary|media\.name)/
            .test(l)
        ).join("; "),
    );
  }
  return out.join(" | ");
}

function recordMonitor(server: string): Recording {
  const child = new Deno.Command("parec", {
    args: [
      `--server=${server}`,
      "-d",
      "out.monitor",
      "--raw",
      "--format=s16le",
      `--rate=${RATE}`,
      "--channels=1",
      "--latency-msec=50",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let running = true;
  void child.status.then(() => running = false);
  let said = "";
  const saying = (async () => {
    for await (
      const text of child.stderr.pipeThrough(new TextDecoderStream())
    ) {
      said = (said + text).slice(-300);
    }
  })();
  const window = RATE / 20;
  let bytes = 0;
  let peak = 0;
  let sum = 0;
  let n = 0;
  let odd: number | null = null;
  const reading = (async () => {
    for await (const chunk of child.stdout) {
      bytes += chunk.length;
      let i = 0;
      const take = (lo: number, hi: number) => {
        const v = (hi << 24 >> 16) | lo;
        sum += v * v;
        if (++n === window) {
          peak = Math.max(peak, Math.sqrt(sum / n));
          sum = 0;
          n = 0;
        }
      };
      if (odd !== null && chunk.length > 0) {
        take(odd, chunk[0]);
        odd = null;
        i = 1;
      }
      for (; i + 1 < chunk.length; i += 2) take(chunk[i], chunk[i + 1]);
      if (i < chunk.length) odd = chunk[i];
    }
  })();
  return {
    peak: () => peak,
    state: () => ({ seconds: bytes / 2 / RATE, running, said }),
    async stop() {
      try {
        child.kill();
      } catch {
        // It ended by itself (`state().running` says so).
      }
      await child.status;
      await reading.catch(() => {});
      await saying.catch(() => {});
    },
  };
}

/** A private X display (Debian `xvfb`): `display` is what `DISPLAY` takes. */
export interface Display {
  display: string;
  stop(): Promise<void>;
}

/** Starts Xvfb on the first free display number (it reports the one it took). */
export async function startXvfb(): Promise<Display> {
  const child = new Deno.Command("Xvfb", {
    args: [
      "-displayfd",
      "1",
      "-screen",
      "0",
      "1280x1024x24",
      "-nolisten",
      "tcp",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("Xvfb exited before it reported its display");
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  void child.stdout.cancel().catch(() => {});
  return {
    display: `:${text.trim()}`,
    async stop() {
      child.kill();
      await child.status;
    },
  };
}
