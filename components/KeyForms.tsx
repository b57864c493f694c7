/**
 * The key mint form (errors in place, values kept) and the one-time display of a new
 * key's plaintext with its copy button.
 */
import CopyButton from "../islands/CopyButton.tsx";
import type { ApiKeyView } from "../lib/api_keys.ts";
import { Island } from "../lib/console/island.tsx";
import { SCOPES } from "../lib/principal.ts";
import { Csrf, FieldError, Notice } from "./ui.tsx";

/** Expiry choices of the mint form, in days (0 = never). */
export const EXPIRY_DAYS = [0, 1, 7, 30, 90, 365] as const;

export interface MintInput {
  tenant_id: string;
  scopes: string[];
  name: string;
  expires_in_days: string;
}

export function CreatedKey(
  props: { created: { key: ApiKeyView; api_key: string } },
) {
  const { key, api_key } = props.created;
  return (
    <Notice kind="success" title={`Key ${key.key_id} created`} id="created-key">
      <p>
        <strong>Copy this key now. It will not be shown again</strong>{" "}
        — the service stores only a hash of it. Tenant{" "}
        <code>{key.tenant_id}</code>, scopes {key.scopes.join(", ")}.
      </p>
      <div class="secret-row">
        <code id="new-key-plaintext" class="secret">{api_key}</code>
        <Island
          component={CopyButton}
          props={{ targetId: "new-key-plaintext", label: "Copy key" }}
          inline
        />
      </div>
    </Notice>
  );
}

export function MintForm(
  props: {
    data: { mint: MintInput; mintErrors: Record<string, string> };
    csrf: string;
  },
) {
  const { mint, mintErrors: errs } = props.data;
  const invalid = (p: string) => errs[p] ? "true" : undefined;
  const described = (p: string, help?: string) =>
    errs[p] ? `mint-${p}-error` : help;
  return (
    <form
      method="post"
      action="/admin/keys"
      class="card form mint"
      aria-labelledby="mint-title"
    >
      <h2 id="mint-title">Mint a key</h2>
      <Csrf token={props.csrf} />
      {errs.form && <Notice kind="error">{errs.form}</Notice>}
      <div class="form-grid">
        <div class="field">
          <label for="mint-tenant">Tenant</label>
          <input
            id="mint-tenant"
            name="tenant_id"
            required
            pattern="[A-Za-z0-9_\-]{1,64}"
            value={mint.tenant_id}
            autocomplete="off"
            aria-invalid={invalid("tenant_id")}
            aria-describedby={described("tenant_id", "mint-tenant-help")}
          />
          <FieldError id="mint-tenant_id-error" message={errs.tenant_id} />
          {!errs.tenant_id && (
            <p id="mint-tenant-help" class="help">1–64 of A–Z a–z 0–9 _ -</p>
          )}
        </div>
        <div class="field">
          <label for="mint-name">
            Name <span class="muted">(optional)</span>
          </label>
          <input
            id="mint-name"
            name="name"
            maxLength={100}
            value={mint.name}
            autocomplete="off"
            aria-invalid={invalid("name")}
            aria-describedby={described("name")}
          />
          <FieldError id="mint-name-error" message={errs.name} />
        </div>
        <div class="field">
          <label for="mint-expiry">Expires</label>
          <select
            id="mint-expiry"
            name="expires_in_days"
            aria-invalid={invalid("expires_at")}
            aria-describedby={described("expires_at")}
          >
            {EXPIRY_DAYS.map((d) => (
              <option
                key={d}
                value={String(d)}
                selected={mint.expires_in_days === String(d)}
              >
                {d === 0 ? "Never" : d === 1 ? "In 1 day" : `In ${d} days`}
              </option>
            ))}
          </select>
          <FieldError id="mint-expires_at-error" message={errs.expires_at} />
        </div>
        <fieldset class="field" aria-describedby={described("scopes")}>
          <legend>Scopes</legend>
          {SCOPES.map((s) => (
            <label class="check" key={s}>
              <input
                type="checkbox"
                name="scopes"
                value={s}
                checked={mint.scopes.includes(s)}
              />{" "}
              <code>{s}</code>
            </label>
          ))}
          <FieldError id="mint-scopes-error" message={errs.scopes} />
        </fieldset>
      </div>
      <button type="submit" class="btn btn-primary">Mint key</button>
    </form>
  );
}
