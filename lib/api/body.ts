/**
 * Request bodies: reads a JSON object with a size bound, and turns zod issues into the
 * `AVTR_*` error of DECISIONS 3 with the field's JSON path in `param`.
 */
import type { z } from "zod";
import { ApiError, type ErrorCode } from "./errors.ts";

/** The largest request body accepted (DECISIONS 3). */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * Reads the body as a JSON object. Throws 413 `AVTR_REQUEST_TOO_LARGE` past 64 KiB and
 * 400 `AVTR_REQUEST_INVALID` for a non-JSON content type, malformed JSON or a non-object.
 */
export async function readJsonObject(
  req: Request,
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
  const bytes = await readBounded(req, MAX_BODY_BYTES);
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

async function readBounded(req: Request, max: number): Promise<Uint8Array> {
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel();
      throw new ApiError(
        "AVTR_REQUEST_TOO_LARGE",
        "Request body is larger than 64 KiB",
      );
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
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
