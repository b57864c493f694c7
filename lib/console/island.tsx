/**
 * Islands: interactive components rendered on the server inside a marker element whose
 * `data-island` names the component and `data-props` holds its props as JSON; the
 * browser bundle (lib/console/client.ts) hydrates every marker it finds. Props travel in
 * an attribute, not an inline script, so the CSP needs no 'unsafe-inline'.
 */
import type { ComponentType } from "preact";

/** Props must survive JSON: the browser receives exactly what the server rendered with. */
export type IslandProps = Record<string, unknown>;

/** Renders island `component` (registered under its function name) with `props`. */
export function Island<P extends IslandProps>(
  props: { component: ComponentType<P>; props: P; inline?: boolean },
) {
  const C = props.component as ComponentType<P>;
  const Tag = props.inline ? "span" : "div";
  return (
    <Tag
      class="island"
      data-island={C.name}
      data-props={JSON.stringify(props.props)}
    >
      <C {...props.props} />
    </Tag>
  );
}
