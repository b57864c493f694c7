/**
 * The OpenAPI 3.1 document of the REST API (DECISIONS 10), generated from the zod schemas
 * that validate requests and check responses (`z.toJSONSchema`), from the error table,
 * and from `API_OPERATIONS` (./api_operations.ts).
 */
import { z } from "zod";
import {
  API_OPERATIONS,
  type ApiOperation,
  type JsonSchema,
  operationErrors,
} from "./operations.ts";
import { ERROR_CODES, type ErrorCode } from "../errors.ts";
import { errorBodySchema, SESSION_ID_PATTERN } from "./schemas.ts";

/**
 * The API's version: the document's `info.version`, and the version of the client
 * packages built from client/ (`deno task pack`), which speak this API.
 */
export const API_VERSION = "1.0.0";

export type OpenApiDocument = Record<string, unknown> & {
  openapi: string;
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components: Record<string, Record<string, unknown>>;
};

const SESSION_ID_PARAM = {
  name: "session_id",
  in: "path",
  required: true,
  schema: { type: "string", minLength: 1, pattern: SESSION_ID_PATTERN.source },
};

function toSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const js = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
  }) as JsonSchema;
  delete js.$schema;
  return js;
}

const HEADERS: Record<string, JsonSchema> = {
  "X-Request-Id": {
    description:
      "The request's id: the client's `X-Request-Id` when it is 1 to 128 characters of `[A-Za-z0-9_-]`, else a generated UUID. Error bodies echo it as `request_id`",
    schema: { type: "string", pattern: "^[A-Za-z0-9_-]{1,128}$" },
  },
  "X-RateLimit-Limit": {
    description: "Requests allowed per credential in the current 60-s window",
    schema: { type: "integer", minimum: 1 },
  },
  "X-RateLimit-Remaining": {
    description: "Requests left in the current window",
    schema: { type: "integer", minimum: 0 },
  },
  "X-RateLimit-Reset": {
    description: "Unix epoch seconds when the current window ends",
    schema: { type: "integer", minimum: 0 },
  },
  "Retry-After": {
    description:
      "Seconds to wait before retrying; equals the body's `retry_after`",
    schema: { type: "integer", minimum: 1, maximum: 3600 },
  },
  Deprecation: {
    description: "`true`: this path is an alias; use the canonical path",
    schema: { type: "string", const: "true" },
  },
  Link: {
    description: '`<canonical path>; rel="successor-version"`',
    schema: { type: "string" },
  },
};

function headerRefs(names: string[]): Record<string, { $ref: string }> {
  return Object.fromEntries(
    names.map((n) => [n, { $ref: `#/components/headers/${n}` }]),
  );
}

function errorResponses(
  op: ApiOperation,
  docsBaseUrl: string,
  extraHeaders: string[],
): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of operationErrors(op)) {
    const s = ERROR_CODES[code].status;
    byStatus.set(s, [...byStatus.get(s) ?? [], code]);
  }
  const out: Record<string, unknown> = {};
  for (const [s, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const retryable = codes.some((c) => ERROR_CODES[c].retryable);
    const lines = codes.map((c) =>
      `- [\`${c}\`](${docsBaseUrl.replace(/\/+$/, "")}/errors/${c}): ${
        ERROR_CODES[c].title
      }`
    );
    out[String(s)] = {
      description: lines.join("\n"),
      headers: headerRefs([
        ...extraHeaders,
        ...(retryable ? ["Retry-After"] : []),
      ]),
      content: {
        "application/json": {
          schema: {
            allOf: [
              { $ref: "#/components/schemas/ErrorBody" },
              { properties: { code: { enum: codes } } },
            ],
          },
        },
      },
    };
  }
  return out;
}

/** Builds the OpenAPI 3.1 document; `docsBaseUrl` is the base of every `doc_url`. */
export function buildOpenApi(docsBaseUrl: string): OpenApiDocument {
  const schemas: Record<string, JsonSchema> = {
    ErrorBody: toSchema(errorBodySchema, "output"),
  };
  const paths: OpenApiDocument["paths"] = {};
  const base = [
    "X-Request-Id",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
  ];
  for (const op of API_OPERATIONS) {
    const canonical = op.aliasOf
      ? API_OPERATIONS.find((o) => o.operationId === op.aliasOf)
      : undefined;
    const headers = canonical ? [...base, "Deprecation", "Link"] : base;
    const params: unknown[] = [];
    if (op.path.includes("{session_id}")) params.push(SESSION_ID_PARAM);
    if (op.path.includes("{key_id}")) {
      params.push({
        name: "key_id",
        in: "path",
        required: true,
        schema: { type: "string", minLength: 1 },
      });
    }
    params.push(...op.parameters ?? []);
    params.push({
      name: "X-Request-Id",
      in: "header",
      required: false,
      schema: HEADERS["X-Request-Id"].schema,
    });
    const success: Record<string, unknown> = {
      description: op.success.schema
        ? (op.success.name ?? "Success")
        : "Done, no body",
      headers: headerRefs(headers),
    };
    if (op.success.schema && op.success.name) {
      schemas[op.success.name] ??= toSchema(op.success.schema, "output");
      success.content = {
        "application/json": {
          schema: { $ref: `#/components/schemas/${op.success.name}` },
        },
      };
    }
    const operation: Record<string, unknown> = {
      operationId: op.operationId,
      summary: op.summary,
      description: canonical
        ? `${op.description}\n\nDeprecated alias of \`${canonical.method.toUpperCase()} ${canonical.path}\`: behaves exactly like it and adds \`Deprecation: true\` and a \`Link\` to it.`
        : op.description,
      tags: [op.path.startsWith("/v1/api-keys") ? "API keys" : "Sessions"],
      security: [{ bearerAuth: [op.scope] }, { apiKeyHeader: [op.scope] }],
      parameters: params,
      responses: {
        [String(op.success.status)]: success,
        ...errorResponses(op, docsBaseUrl, headers),
      },
    };
    if (op.request) {
      if (!schemas[op.request.name]) {
        const js = toSchema(op.request.schema, "input");
        op.request.rules?.(js);
        schemas[op.request.name] = js;
      }
      operation.requestBody = {
        required: true,
        content: {
          "application/json": {
            schema: { $ref: `#/components/schemas/${op.request.name}` },
          },
        },
      };
    }
    if (canonical) operation.deprecated = true;
    (paths[op.path] ??= {})[op.method] = operation;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Live Avatar Session Service",
      version: API_VERSION,
      description:
        "Create live avatar sessions, read their status, end them, and mint media tokens; manage API keys. Every `/v1/` response carries `X-Request-Id` and the `X-RateLimit-*` headers; errors are flat bodies whose `code` is documented under `doc_url`. Unknown paths answer 404 `AVTR_NOT_FOUND`, wrong methods 405 `AVTR_METHOD_NOT_ALLOWED` with `Allow`.",
      // Not open source: the service's terms are the operator's.
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
    },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    servers: [{ url: "/" }],
    externalDocs: {
      url: "/docs",
      description: "API reference and error codes",
    },
    tags: [
      {
        name: "Sessions",
        description:
          "Create a live avatar session, read its status, mint media tokens for the browser, end it.",
      },
      {
        name: "API keys",
        description:
          "Mint and revoke the API keys that call this API (scope `keys:admin`).",
      },
    ],
    security: [{ bearerAuth: [] }, { apiKeyHeader: [] }],
    paths,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          description:
            "`Authorization: Bearer <api_key>` (or an identity-provider JWT when configured)",
        },
        apiKeyHeader: { type: "apiKey", in: "header", name: "x-api-key" },
      },
      headers: HEADERS,
      schemas,
    },
  };
}

const cache = new Map<string, string>();

/** The document serialised once per docs base, for `/openapi.json`. */
export function openApiJson(docsBaseUrl: string): string {
  let text = cache.get(docsBaseUrl);
  if (text === undefined) {
    text = JSON.stringify(buildOpenApi(docsBaseUrl));
    cache.set(docsBaseUrl, text);
  }
  return text;
}
