/**
 * The key mint form (errors in place, values kept) and the one-time display of a new
 * key's plaintext with its copy button.
 */
import CopyButton from "../islands/CopyButton.tsx";
import type { ApiKeyView } from "../lib/auth/api_keys.ts";
import { Island } from "../lib/console/island.tsx";
import { SCOPES } from "../lib/principal.ts";
import { Csrf, Field, FieldError, Notice } from "./ui.tsx";

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
    /** A tenant administrator mints for its own tenant only: the field is read-only. */
    fixedTenant?: boolean;
  },
) {
  const { mint, mintErrors: errs } = props.data;
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
        <Field
          id="mint-tenant"
          label="Tenant"
          errorId="mint-tenant_id-error"
          error={errs.tenant_id}
          help={props.fixedTenant
            ? "Your tenant: you administer it alone"
            : "1–64 of A–Z a–z 0–9 _ -"}
        >
          {(control) => (
            <input
              name="tenant_id"
              required
              readOnly={props.fixedTenant}
              pattern="[A-Za-z0-9_\-]{1,64}"
              value={mint.tenant_id}
              autocomplete="off"
              {...control}
            />
          )}
        </Field>
        <Field
          id="mint-name"
          label={
            <>
              Name <span class="muted">(optional)</span>
            </>
          }
          errorId="mint-name-error"
          error={errs.name}
        >
          {(control) => (
            <input
              name="name"
              maxLength={100}
              value={mint.name}
              autocomplete="off"
              {...control}
            />
          )}
        </Field>
        <Field
          id="mint-expiry"
          label="Expires"
          errorId="mint-expires_at-error"
          error={errs.expires_at}
        >
          {(control) => (
            <select name="expires_in_days" {...control}>
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
          )}
        </Field>
        <fieldset
          class="field"
          aria-describedby={errs.scopes ? "mint-scopes-error" : undefined}
        >
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
