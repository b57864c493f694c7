/**
 * The bodies of `POST /v1/api-keys` (and of the console's and CLI's mint forms) and of
 * its 201 answer, and the tenant id's rule: REST schemas, beside the others of
 * ./schemas.ts, for the key store (lib/auth/api_keys.ts) and the OpenAPI document.
 */
import { z } from "zod";
import { SCOPES } from "../principal.ts";

export const TENANT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** What `TENANT_ID_PATTERN` asks for, as a field error says it. */
export const TENANT_ID_RULE =
  "Must be 1 to 64 characters of A-Z, a-z, 0-9, _ or -";

const NAME_RULE = { message: "Must be 1 to 100 characters" };
const EPOCH_RULE = { message: "Must be an integer epoch ms" };

/** Body of `POST /v1/api-keys` (and of the console's and CLI's mint forms). */
export const apiKeyCreateSchema = z.strictObject({
  tenant_id: z.string().regex(TENANT_ID_PATTERN, { message: TENANT_ID_RULE }),
  scopes: z.array(z.enum(SCOPES)).min(1, {
    message: "Must name at least one scope",
  }).superRefine((scopes, ctx) => {
    scopes.forEach((s, i) => {
      if (scopes.indexOf(s) !== i) {
        ctx.addIssue({
          code: "custom",
          message: `Scope ${s} is listed twice`,
          path: [i],
        });
      }
    });
  }),
  name: z.string().min(1, NAME_RULE).max(100, NAME_RULE).optional(),
  expires_at: z.int(EPOCH_RULE).min(0, EPOCH_RULE).optional(),
});
export type ApiKeyCreateInput = z.output<typeof apiKeyCreateSchema>;

/** The 201 answer of `POST /v1/api-keys`: the only place `api_key` ever appears. */
export const apiKeyCreatedSchema = z.object({
  key_id: z.string(),
  api_key: z.string().describe("The key's plaintext. Shown once, never again"),
  tenant_id: z.string(),
  scopes: z.array(z.enum(SCOPES)),
  name: z.string().optional(),
  created_at: z.int().min(0),
  expires_at: z.int().min(0).optional(),
});
export type ApiKeyCreated = z.output<typeof apiKeyCreatedSchema>;
