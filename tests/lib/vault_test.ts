import assert from "node:assert/strict";
import type { ProviderCredentials } from "../../lib/ports/providers.ts";
import { CredentialVault } from "../../lib/vault.ts";
import { testApp } from "../_helpers.ts";

/** Runs `fn` while recording every buffer TextEncoder.encode returns. */
function captureEncoded<T>(fn: () => T): { result: T; buffers: Uint8Array[] } {
  const original = TextEncoder.prototype.encode;
  const buffers: Uint8Array[] = [];
  TextEncoder.prototype.encode = function (this: TextEncoder, input?: string) {
    const out = original.call(this, input);
    buffers.push(out);
    return out;
  };
  try {
    return { result: fn(), buffers };
  } finally {
    TextEncoder.prototype.encode = original;
  }
}

const CREDS: ProviderCredentials = {
  type: "vendor_b",
  access_token: "tok-VAULT-1",
  agent_id: "a",
};

Deno.test("CredentialVault keeps credentials and zeroes their bytes", async (t) => {
  const vault = new CredentialVault();
  const { buffers } = captureEncoded(() => vault.put("s1", CREDS));
  const stored = buffers.at(-1)!;
  await t.step("use() decodes a copy", () => {
    assert.equal(vault.has("s1"), true);
    assert.equal(vault.size, 1);
    const copy = vault.use("s1");
    assert.deepEqual(copy, CREDS);
    assert.notEqual(copy, vault.use("s1"));
    assert.equal(vault.use("other"), null);
  });
  await t.step("zero() overwrites the bytes and forgets the entry", () => {
    assert.ok(stored.some((b) => b !== 0));
    vault.zero("s1");
    assert.ok(stored.every((b) => b === 0));
    assert.equal(vault.has("s1"), false);
    assert.equal(vault.use("s1"), null);
    assert.equal(vault.size, 0);
    vault.zero("s1");
  });
  await t.step("put() over an entry zeroes the old bytes", () => {
    const first = captureEncoded(() => vault.put("s2", CREDS)).buffers.at(-1)!;
    vault.put("s2", { ...CREDS, access_token: "tok-2" });
    assert.ok(first.every((b) => b === 0));
    assert.equal(vault.size, 1);
  });
});

Deno.test("closing the app zeroes every credential in the vault", async () => {
  const app = await testApp();
  const vault = app.app.deps.vault;
  const { buffers } = captureEncoded(() => {
    vault.put("s1", CREDS);
    vault.put("s2", { type: "vendor_a_realtime", client_secret: "cs" });
  });
  await app.close();
  assert.equal(vault.size, 0);
  for (const b of buffers) assert.ok(b.every((x) => x === 0));
});
