/**
 * The browser entry of the console (bundled by lib/console/bundle.ts into
 * static/build/client.js): hydrates every island the server rendered.
 */
import { h, hydrate } from "preact";
import { ISLANDS } from "./islands_registry.ts";

for (const el of document.querySelectorAll<HTMLElement>("[data-island]")) {
  const component = ISLANDS[el.dataset.island ?? ""];
  if (!component) continue;
  const props = JSON.parse(el.dataset.props ?? "{}");
  hydrate(h(component, props), el);
}
