import { json } from "../lib/api/http.ts";

export const handler = {
  /** Liveness: the process answers. Readiness (KV, token secret) is /readyz. */
  GET(): Response {
    return json({ status: "ok" });
  },
};
