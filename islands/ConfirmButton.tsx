/**
 * A submit button that asks first. Without script it submits the form as is and the
 * server answers with a confirmation page (the form lacks `confirm=yes`); with script it
 * opens a modal dialog and submits with `confirm=yes` when the user agrees.
 */
import { useRef } from "preact/hooks";

export interface ConfirmButtonProps {
  label: string;
  /** The question in the dialog. */
  message: string;
  confirmLabel: string;
  /** Submitted as the button's name/value (e.g. action=force_end). */
  name?: string;
  value?: string;
  danger?: boolean;
  [key: string]: unknown;
}

export default function ConfirmButton(props: ConfirmButtonProps) {
  const button = useRef<HTMLButtonElement>(null);
  const dialog = useRef<HTMLDialogElement>(null);
  const cls = props.danger ? "btn btn-danger" : "btn btn-secondary";

  function ask(e: Event) {
    if (!dialog.current?.showModal) return; // no dialog support: let the server ask
    e.preventDefault();
    dialog.current.showModal();
  }

  function confirm() {
    const form = button.current?.form;
    if (!form || !button.current) return;
    const input = document.createElement("input");
    input.type = "hidden";
    input.name = "confirm";
    input.value = "yes";
    form.appendChild(input);
    dialog.current?.close();
    form.requestSubmit(button.current);
  }

  return (
    <span class="confirm">
      <button
        ref={button}
        type="submit"
        class={cls}
        name={props.name}
        value={props.value}
        onClick={ask}
      >
        {props.label}
      </button>
      <dialog ref={dialog} class="dialog" aria-label={props.label}>
        <p class="dialog-message">{props.message}</p>
        <div class="dialog-actions">
          <button
            type="button"
            class="btn btn-quiet"
            onClick={() => dialog.current?.close()}
          >
            Cancel
          </button>
          <button type="button" class={cls} onClick={confirm}>
            {props.confirmLabel}
          </button>
        </div>
      </dialog>
    </span>
  );
}
