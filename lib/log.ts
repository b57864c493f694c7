/**
 * Structured JSON logging, one object a line. Every record passes through `redact`, so a
 * credential that slips into a field is masked before it is written.
 */

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogRecord = Record<string, unknown>;
export type LogSink = (line: string) => void;

const SECRET_FIELD =
  /^(authorization|x-api-key|api_key|token|client_token|session_token|secret|password|client_secret|access_token|credential|auth_headers|signed_url|cookie)$/i;

const MAYBE_SECRET = /=|bearer|avk_/i;

/** Masks `token=` query values and bearer credentials inside a string. */
export function redactText(text: string): string {
  // Most strings hold none of the patterns: skip the replacements for them.
  if (!MAYBE_SECRET.test(text)) return text;
  return text
    .replace(
      /([?&](?:token|api_key|key|signature|sig|xi-api-key)=)[^&#\s"]*/gi,
      "$1[redacted]",
    )
    .replace(/(bearer\s+)[A-Za-z0-9._~+/=-]+/gi, "$1[redacted]")
    .replace(/avk_[A-Za-z0-9_-]+/g, "avk_[redacted]");
}

/** Field names already classified; field names come from code, so this stays small. */
const secretFieldCache = new Map<string, boolean>();
const SECRET_FIELD_CACHE_MAX = 1024;

function isSecretField(key: string): boolean {
  let secret = secretFieldCache.get(key);
  if (secret === undefined) {
    secret = SECRET_FIELD.test(key);
    if (secretFieldCache.size < SECRET_FIELD_CACHE_MAX) {
      secretFieldCache.set(key, secret);
    }
  }
  return secret;
}

function redactValue(key: string, value: unknown, depth: number): unknown {
  if (key !== "" && isSecretField(key)) return "[redacted]";
  if (typeof value === "string") return redactText(value);
  if (depth > 4 || value === null || typeof value !== "object") return value;
  if (value instanceof Error) {
    return { name: value.name, message: redactText(value.message) };
  }
  if (Array.isArray(value)) {
    return value.map((v) => redactValue("", v, depth + 1));
  }
  const out: Record<string, unknown> = {};
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    out[k] = redactValue(k, (value as Record<string, unknown>)[k], depth + 1);
  }
  return out;
}

export function redact(record: LogRecord): LogRecord {
  return redactValue("", record, 0) as LogRecord;
}

/** The access-log record of one request (`Logger.request`). */
export interface RequestLogRecord {
  request_id: string;
  method: string;
  route?: string;
  path: string;
  status: number;
  duration_ms: number;
  tenant?: string;
}

export interface Logger {
  log(level: LogLevel, msg: string, fields?: LogRecord): void;
  /**
   * The access-log line of one request: the line `info("request", record)` writes, built
   * without walking the record (one is written for every request).
   */
  request(record: RequestLogRecord): void;
  debug(msg: string, fields?: LogRecord): void;
  info(msg: string, fields?: LogRecord): void;
  warn(msg: string, fields?: LogRecord): void;
  error(msg: string, fields?: LogRecord): void;
}

/** A string field of a line, redacted, as JSON. */
function text(value: string): string {
  return JSON.stringify(redactText(value));
}

/** A number field of a line as `JSON.stringify` writes it (null when not finite). */
function number(value: number): string {
  return Number.isFinite(value) ? String(value) : "null";
}

/** A logger writing JSON lines to `sink` (stdout by default), stamped by `now`. */
export function createLogger(
  sink: LogSink = (line) => console.log(line),
  now: () => number = Date.now,
  minLevel: LogLevel = "info",
): Logger {
  const order: Record<LogLevel, number> = {
    debug: 0,
    info: 1,
    warn: 2,
    error: 3,
  };
  // Consecutive lines of the same millisecond share one timestamp string.
  let lastMs = NaN;
  let lastTs = "";
  const stamp = (): string => {
    const ms = now();
    if (ms !== lastMs) {
      lastMs = ms;
      lastTs = new Date(ms).toISOString();
    }
    return lastTs;
  };
  const log = (level: LogLevel, msg: string, fields: LogRecord = {}) => {
    if (order[level] < order[minLevel]) return;
    // The same record `redact({ ts, level, msg, ...fields })` gives, built in one pass.
    const rec: LogRecord = {
      ts: stamp(),
      level,
      msg: redactValue("msg", msg, 1),
    };
    for (const k in fields) {
      if (!Object.hasOwn(fields, k)) continue;
      rec[k] = redactValue(k, fields[k], 1);
    }
    sink(JSON.stringify(rec));
  };
  const request = (r: RequestLogRecord) => {
    if (order.info < order[minLevel]) return;
    let line = '{"ts":"' + stamp() +
      '","level":"info","msg":"request","request_id":' + text(r.request_id) +
      ',"method":' + text(r.method);
    if (r.route !== undefined) line += ',"route":' + text(r.route);
    line += ',"path":' + text(r.path) + ',"status":' + number(r.status) +
      ',"duration_ms":' + number(r.duration_ms);
    if (r.tenant !== undefined) line += ',"tenant":' + text(r.tenant);
    sink(line + "}");
  };
  return {
    log,
    request,
    debug: (m, f) => log("debug", m, f),
    info: (m, f) => log("info", m, f),
    warn: (m, f) => log("warn", m, f),
    error: (m, f) => log("error", m, f),
  };
}

/** A logger that keeps its lines in memory, for tests that scan them. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger((line) => lines.push(line), Date.now, "debug");
  return Object.assign(logger, { lines });
}

/**
 * A stdout sink that batches lines and writes them every `intervalMs` (or at 64 KiB), so
 * the request path never blocks on a synchronous console write. `flush()` writes what is
 * pending; it also runs on process unload.
 */
export function bufferedStdoutSink(
  intervalMs = 20,
): LogSink & { flush(): void } {
  const encoder = new TextEncoder();
  let pending: string[] = [];
  let bytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const data = encoder.encode(pending.join("\n") + "\n");
    pending = [];
    bytes = 0;
    let off = 0;
    while (off < data.length) off += Deno.stdout.writeSync(data.subarray(off));
  };
  globalThis.addEventListener("unload", flush);
  const sink = (line: string) => {
    pending.push(line);
    bytes += line.length;
    if (bytes >= 64 * 1024) flush();
    else if (timer === undefined) {
      timer = setTimeout(flush, intervalMs);
      Deno.unrefTimer(timer as unknown as number);
    }
  };
  return Object.assign(sink, { flush });
}

/**
 * A thrown or rejected value as log fields, touching nothing the value itself defines
 * beyond an `Error`'s own name, message and stack (read inside a guard): never `String()`
 * of an object, which runs its `toString` and may throw or leak.
 */
export function describeThrown(value: unknown): LogRecord {
  try {
    if (value instanceof Error) {
      return {
        name: typeof value.name === "string" ? value.name : "Error",
        message: typeof value.message === "string" ? value.message : "",
        stack: typeof value.stack === "string" ? value.stack : undefined,
      };
    }
  } catch {
    // A hostile getter: fall through to the type alone.
  }
  if (typeof value === "string") return { message: value };
  if (
    typeof value === "number" || typeof value === "boolean" || value === null ||
    value === undefined
  ) {
    return { value: value === undefined ? "undefined" : value };
  }
  return { type: typeof value };
}

/**
 * The process's last resort (main.ts): an unhandled rejection or an uncaught exception
 * (an event handler's throw included) is written through `log`, redacted like every
 * other line, and `preventDefault()` keeps the process, and every other tenant's live
 * session, running. Returns a function that removes both listeners.
 */
export function installLastResortHandlers(
  log: Logger,
  target: EventTarget = globalThis,
): () => void {
  const onRejection = (ev: Event) => {
    ev.preventDefault();
    log.error("unhandled rejection", {
      reason: describeThrown((ev as PromiseRejectionEvent).reason),
    });
  };
  const onError = (ev: Event) => {
    ev.preventDefault();
    log.error("uncaught exception", {
      error: describeThrown((ev as ErrorEvent).error),
    });
  };
  target.addEventListener("unhandledrejection", onRejection);
  target.addEventListener("error", onError);
  return () => {
    target.removeEventListener("unhandledrejection", onRejection);
    target.removeEventListener("error", onError);
  };
}
