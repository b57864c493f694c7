/**
 * Confirmation of a dangerous form action: `ConfirmAction` asks in the browser (the
 * ConfirmButton island); `ConfirmForm` is the server's own question, shown when the
 * form arrived without `confirm=yes` (no script).
 */
import ConfirmButton, {
  type ConfirmButtonProps,
} from "../islands/ConfirmButton.tsx";
import { Island } from "../lib/console/island.tsx";
import { Csrf } from "./ui.tsx";

/** Place inside a form; see islands/ConfirmButton.tsx for the no-script fallback. */
export function ConfirmAction(props: ConfirmButtonProps) {
  return <Island component={ConfirmButton} inline props={props} />;
}

/**
 * Posts `action=value` (when `value` is given), `fields` and `confirm=yes` to `action`,
 * or cancels back to `cancelHref` (default: `action`).
 */
export function ConfirmForm(
  props: {
    action: string;
    csrf: string;
    value?: string;
    label: string;
    fields?: Record<string, string>;
    cancelHref?: string;
  },
) {
  return (
    <form method="post" action={props.action} class="row">
      <Csrf token={props.csrf} />
      {Object.entries(props.fields ?? {}).map(([name, value]) => (
        <input key={name} type="hidden" name={name} value={value} />
      ))}
      <input type="hidden" name="confirm" value="yes" />
      <button
        type="submit"
        name={props.value === undefined ? undefined : "action"}
        value={props.value}
        class="btn btn-danger"
      >
        {props.label}
      </button>
      <a href={props.cancelHref ?? props.action} class="btn btn-quiet">
        Cancel
      </a>
    </form>
  );
}
