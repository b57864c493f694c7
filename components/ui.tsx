/** Small server-rendered building blocks of console pages. */
import type { ComponentChildren } from "preact";
import { formatShortTime, formatTime } from "../lib/console/format.ts";

/** A page heading with an optional lead paragraph and actions on the right. */
export function PageHeader(
  props: {
    title: string;
    lead?: ComponentChildren;
    actions?: ComponentChildren;
  },
) {
  return (
    <div class="page-header">
      <div>
        <h1>{props.title}</h1>
        {props.lead && <p class="lead">{props.lead}</p>}
      </div>
      {props.actions && <div class="actions">{props.actions}</div>}
    </div>
  );
}

/** A message box: `error` is announced at once (role=alert), others politely. */
export function Notice(
  props: {
    kind: "error" | "success" | "warning" | "info";
    title?: string;
    children?: ComponentChildren;
    id?: string;
  },
) {
  return (
    <div
      id={props.id}
      class={`notice notice-${props.kind}`}
      role={props.kind === "error" ? "alert" : "status"}
    >
      {props.title && <p class="notice-title">{props.title}</p>}
      {props.children}
    </div>
  );
}

/** What a table shows when it has no rows. */
export function EmptyState(
  props: { title: string; children?: ComponentChildren },
) {
  return (
    <div class="empty">
      <p class="empty-title">{props.title}</p>
      {props.children && <p>{props.children}</p>}
    </div>
  );
}

/** A column head of `DataTable`: its text, or its text and a class (e.g. `num`). */
export type Column = string | { label: string; class: string };

/**
 * A console table (cards on narrow screens): `columns` head it, `actions` adds an
 * unlabelled last column for per-row buttons, `children` are its rows.
 */
export function DataTable(
  props: {
    label: string;
    columns: Column[];
    actions?: boolean;
    children: ComponentChildren;
  },
) {
  return (
    <div class="table-wrap">
      <table class="table table-cards" aria-label={props.label}>
        <thead>
          <tr>
            {props.columns.map((c) =>
              typeof c === "string"
                ? <th key={c} scope="col">{c}</th>
                : <th key={c.label} scope="col" class={c.class}>{c.label}</th>
            )}
            {props.actions && (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** The hidden CSRF field every console form carries. */
export function Csrf(props: { token: string }) {
  return <input type="hidden" name="_csrf" value={props.token} />;
}

/** A status pill; the text carries the meaning, the colour only repeats it. */
export function StatusBadge(props: { status: string }) {
  return <span class={`badge badge-${props.status}`}>{props.status}</span>;
}

/** A field's error text, tied to its input by id for screen readers. */
export function FieldError(props: { id: string; message?: string }) {
  if (!props.message) return null;
  return <p id={props.id} class="field-error">{props.message}</p>;
}

/** What `Field` spreads on its control: the id and the ties to its error or help. */
export interface FieldControl {
  id: string;
  "aria-invalid": "true" | undefined;
  "aria-describedby": string | undefined;
}

/**
 * A labelled form field. The control (`children`, given the `FieldControl` props to
 * spread on it) is marked invalid and described by its error when `error` is set;
 * otherwise by `help`, shown only while there is no error (id `<id>-help` by default).
 */
export function Field(
  props: {
    id: string;
    label: ComponentChildren;
    errorId: string;
    error?: string;
    help?: ComponentChildren;
    helpId?: string;
    class?: string;
    children: (control: FieldControl) => ComponentChildren;
  },
) {
  const helpId = props.help === undefined
    ? undefined
    : props.helpId ?? `${props.id}-help`;
  return (
    <div class={props.class ? `field ${props.class}` : "field"}>
      <label for={props.id}>{props.label}</label>
      {props.children({
        id: props.id,
        "aria-invalid": props.error ? "true" : undefined,
        "aria-describedby": props.error ? props.errorId : helpId,
      })}
      <FieldError id={props.errorId} message={props.error} />
      {!props.error && helpId && <p id={helpId} class="help">{props.help}</p>}
    </div>
  );
}

/**
 * A time element with a machine-readable datetime: the full UTC time, or a compact one
 * (relative to `now`'s day) with the full time as its title.
 */
export function Time(props: { ms?: number | null; now?: number }) {
  if (props.ms === null || props.ms === undefined) {
    return <span class="muted">—</span>;
  }
  const full = formatTime(props.ms);
  return (
    <time
      dateTime={new Date(props.ms).toISOString()}
      title={props.now === undefined ? undefined : full}
    >
      {props.now === undefined ? full : formatShortTime(props.ms, props.now)}
    </time>
  );
}
