/** Calls on /v1/api-keys shared by its test files. */
import assert from "node:assert/strict";
import { authJson, TEST_ADMIN_KEY, testApp } from "../../_helpers.ts";

export type T = Awaited<ReturnType<typeof testApp>>;

export async function mint(
  t: T,
  body: Record<string, unknown>,
  key = TEST_ADMIN_KEY,
): Promise<{ key_id: string; api_key: string }> {
  const res = await t.request("/v1/api-keys", {
    method: "POST",
    headers: authJson(key),
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 201, await res.clone().text());
  return await res.json();
}

export function del(
  t: T,
  keyId: string,
  key = TEST_ADMIN_KEY,
): Promise<Response> {
  return t.request(`/v1/api-keys/${keyId}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${key}` },
  });
}

export async function assertError(
  res: Response,
  status: number,
  code: string,
  param?: string,
): Promise<void> {
  assert.equal(res.status, status);
  const body = await res.json();
  assert.equal(body.code, code);
  assert.equal(body.param, param);
  assert.equal("api_key" in body, false);
}
