/**
 * Traces (DECISIONS 10) with Deno's built-in OpenTelemetry: off unless the process runs
 * with `OTEL_DENO=true` (and the standard `OTEL_EXPORTER_OTLP_*` variables), when Deno
 * exports these spans with its own HTTP server and `fetch` spans — the latter carry the
 * trace to a media node on a hand-off, so the control plane's create and the node's
 * start are one trace. Without it the API's no-op tracer costs next to nothing.
 * Attributes are ids and outcomes only: never a credential, token or URL.
 */
import {
  type Attributes,
  type Span,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";

const tracer = trace.getTracer("avatar-session-service");

/** Runs `fn` in a child span `name` of the active one; an error marks it failed. */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T> | T,
): Promise<T> {
  return await tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        // The error's class or API code, never its message (it may name a target).
        message: (err as { code?: string })?.code ??
          (err instanceof Error ? err.name : "error"),
      });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Puts a request's id on the active span (the HTTP server's): nothing allocated when
 * there is none (tracing off), as this runs on every request.
 */
export function traceRequestId(requestId: string): void {
  trace.getActiveSpan()?.setAttribute("request_id", requestId);
}
