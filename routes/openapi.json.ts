/** `GET /openapi.json`: the OpenAPI 3.1 document, generated from the request schemas. */
import type { Ctx } from "../lib/api/http.ts";
import { openApiJson } from "../lib/api/openapi.ts";

export const handler = {
  GET(ctx: Ctx): Response {
    return new Response(openApiJson(ctx.deps.config.docsBaseUrl), {
      headers: {
        "content-type": "application/json; charset=utf-8",
        "cache-control": "public, max-age=300",
        "access-control-allow-origin": "*",
      },
    });
  },
};
