/**
 * Request bodies: reads a JSON object with a size bound and a deadline, and turns zod
 * issues into the `AVTR_*` error of DECISIONS 3 with the field's JSON path in `param`.
 */
import type { z } from "zod";
import { ApiError, type ErrorCode } from "../errors.ts";

/** The largest request body accepted (DECISIONS 3). */
export const MAX_BODY_BYTES = 64 * 1024;

/** The default deadline for a whole body (`REQUEST_BODY_TIMEOUT_MS`). */
export const BODY_TIMEOUT_MS = 10_000;

/**
 * Reads the body as a JSON object within `timeoutMs` for the whole of it. Throws 413
 * `AVTR_REQUEST_TOO_LARGE` past 64 KiB, 408 `AVTR_REQUEST_TIMEOUT` (with
 * `Connection: close`) when it has not arrived in time, and 400 `AVTR_REQUEST_INVALID`
 * for a non-JSON content type, a body that breaks off, malformed JSON or a non-object.
 */
export async function readJsonObject(
  req: Request,
  timeoutMs = BODY_TIMEOUT_MS,
): Promise<Record<string, unknown>> {
  const type = (req.headers.get("content-type") ?? "").split(";")[0].trim()
    .toLowerCase();
  if (
    type !== "application/json" &&
    !/^application\/[a-z0-9.+-]+\+json$/.test(type)
  ) {
    throw new ApiError(
      "AVTR_REQUEST_INVALID",
      "Content-Type must be application/json",
    );
  }
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
    throw new ApiError(
      "AVTR_REQUEST_TOO_LARGE",
      "Request body is larger than 64 KiB",
    );
  }
  const bytes = await readBodyBytes(req, MAX_BODY_BYTES, timeoutMs);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new ApiError(
      "AVTR_REQUEST_INVALID",
      "Request body is not valid JSON",
    );
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ApiError(
      "AVTR_REQUEST_INVALID",
      "Request body must be a JSON object",
    );
  }
  return value as Record<string, unknown>;
}

/** The 408 of a body that did not arrive in time; the connection is not kept. */
function bodyTimeout(): ApiError {
  return new ApiError(
    "AVTR_REQUEST_TIMEOUT",
    "The request body did not arrive in time",
    { headers: { connection: "close" } },
  );
}

/**
 * The body's bytes, at most `max` of them, all within `timeoutMs` (one deadline for the
 * whole body, so a client trickling a byte at a time gains nothing). The reader is
 * cancelled on every early exit. Throws the `ApiError`s of `readJsonObject`: 413 past
 * `max`, 408 past the deadline, 400 for a body that breaks off.
 */
export async function readBodyBytes(
  req: Request,
  max: number,
  timeoutMs: number,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  await readBodyChunks(req, max, timeoutMs, (chunk) => {
    chunks.push(chunk);
    total += chunk.byteLength;
  });
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

/**
 * Hands the body to `sink` chunk by chunk as it arrives, under `readBodyBytes`'s bounds
 * and errors. An error `sink` throws cancels the body (the rest is never read) and is
 * thrown on.
 */
export async function readBodyChunks(
  req: Request,
  max: number,
  timeoutMs: number,
  sink: (chunk: Uint8Array) => void,
): Promise<void> {
  if (!req.body) return;
  const reader = req.body.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(bodyTimeout()), timeoutMs);
  });
  // Awaited only through the race below; it may settle when no race is waiting.
  expired.catch(() => {});
  let total = 0;
  try {
    while (true) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await Promise.race([reader.read(), expired]);
      } catch (err) {
        if (err instanceof ApiError) throw err;
        throw new ApiError(
          "AVTR_REQUEST_INVALID",
          "The request body could not be read",
        );
      }
      const { done, value } = chunk;
      if (done) break;
      total += value.byteLength;
      if (total > max) {
        throw new ApiError(
          "AVTR_REQUEST_TOO_LARGE",
          `Request body is larger than ${max / 1024} KiB`,
        );
      }
      sink(value);
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** The JSON path of an issue: `provider_config.external_engine.url`, `scopes[1]`. */
export function issuePath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else out += out === "" ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

/** Describes one zod issue in a sentence-case message naming the field. */
export function issueMessage(issue: z.core.$ZodIssue): string {
  const field = issuePath(issue.path);
  if (issue.code === "unrecognized_keys") {
    const where = field ? ` in ${field}` : "";
    return `Unknown field${issue.keys.length > 1 ? "s" : ""}${where}: ${
      issue.keys.join(", ")
    }`;
  }
  if (issue.code === "invalid_type" && issue.input === undefined) {
    return `${field || "Field"} is required`;
  }
  return field ? `${field}: ${issue.message}` : issue.message;
}

/**
 * Parses `input` with `schema`; on failure throws `code` (400) for the first issue, with
 * `param` set to the issue's path (for unknown keys, the path of the unknown key).
 */
export function parseOrThrow<T extends z.ZodType>(
  schema: T,
  input: unknown,
  code: ErrorCode = "AVTR_REQUEST_INVALID",
): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue.code === "unrecognized_keys"
    ? [...issue.path, issue.keys[0]]
    : issue.path;
  const param = issuePath(path);
  throw new ApiError(code, issueMessage(issue), param ? { param } : {});
}
