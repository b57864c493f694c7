/**
 * Copies the text of the element `targetId` to the clipboard. Rendered hidden on the
 * server (it needs script); it appears once hydrated. Without script the text itself is
 * selectable with one click (CSS `user-select: all`).
 */
import { useEffect, useState } from "preact/hooks";

export interface CopyButtonProps {
  targetId: string;
  label?: string;
  [key: string]: unknown;
}

export default function CopyButton(props: CopyButtonProps) {
  const [ready, setReady] = useState(false);
  const [message, setMessage] = useState("");
  useEffect(() => setReady(true), []);

  async function copy() {
    const el = document.getElementById(props.targetId);
    const text = el?.textContent ?? "";
    try {
      await navigator.clipboard.writeText(text);
      setMessage("Copied to the clipboard");
    } catch {
      // Clipboard API refused (not a secure context): select the text instead.
      if (el) {
        const range = document.createRange();
        range.selectNodeContents(el);
        const sel = globalThis.getSelection();
        sel?.removeAllRanges();
        sel?.addRange(range);
      }
      setMessage("Selected: press Ctrl+C (⌘C) to copy");
    }
  }

  return (
    <span class="copy">
      <button
        type="button"
        class="btn btn-secondary"
        hidden={!ready}
        onClick={copy}
        aria-controls={props.targetId}
      >
        {props.label ?? "Copy"}
      </button>
      <span class="copy-status" role="status" aria-live="polite">
        {message}
      </span>
    </span>
  );
}
