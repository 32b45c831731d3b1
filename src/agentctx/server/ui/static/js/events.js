// One event as a card: its header (seq, type, role, tool, time), its parts (text, JSON,
// images, blobs) and its payload. Errors are marked; images load with the auth header,
// and compressed ones stay a placeholder until clicked.

import { imageUrl } from "./api.js";
import { errorBox, h, json, when } from "./dom.js";

/** Whether an event records a failure. */
export function isError(event) {
  return (
    event.type === "error" ||
    event.meta?.status === "error" ||
    event.payload?.is_error === true
  );
}

const LABELS = {
  user_input: "User",
  agent_response: "Assistant",
  tool_call: "Tool call",
  tool_result: "Tool result",
  system: "System",
  error: "Error",
  summary: "Summary",
  state_delta: "State",
  note: "Note",
  hitl: "Human review",
};

/**
 * The card of an event. ``frames``: Map "event_id:part_index" -> the image's frame info
 * from GET /v1/sessions/{id}/images.
 */
export function eventCard(event, frames = new Map()) {
  const failed = isError(event);
  const classes = ["event", `type-${event.type}`];
  if (event.role) classes.push(`role-${event.role}`);
  if (failed) classes.push("is-error");
  const tool = event.meta?.tool_name || event.payload?.name;
  const header = h(
    "header", { class: "event-head" },
    h("span", { class: "seq", title: event.event_id }, `#${event.seq}`),
    h("span", { class: `badge badge-${event.type}` }, LABELS[event.type] || event.type),
    tool ? h("span", { class: "tool-name mono" }, tool) : null,
    failed ? h("span", { class: "badge badge-failed" }, "failed") : null,
    event.author ? h("span", { class: "muted" }, event.author) : null,
    event.meta?.duration_ms != null
      ? h("span", { class: "muted" }, `${Math.round(event.meta.duration_ms)} ms`) : null,
    h("span", { class: "spacer" }),
    h("span", { class: "muted small" }, `${event.token_estimate} tok`),
    h("time", { class: "muted small", datetime: event.ts }, when(event.ts)),
  );
  const body = h("div", { class: "event-body" });
  event.parts.forEach((part, index) => {
    body.append(partView(part, frames.get(`${event.event_id}:${index}`)));
  });
  const payload = { ...event.payload };
  if (event.type === "tool_call") delete payload.name;
  if (Object.keys(payload).length > 0) {
    body.append(h(
      "details", { class: "payload" },
      h("summary", null, "payload"),
      h("pre", { class: "json" }, json(payload)),
    ));
  }
  return h(
    "article",
    {
      class: classes.join(" "),
      dataset: { seq: event.seq, type: event.type, eventId: event.event_id, callId: event.call_id || "" },
    },
    header,
    body,
  );
}

function partView(part, frame) {
  switch (part.kind) {
    case "text":
      return h("div", { class: "part text" }, part.text);
    case "json":
      return h("pre", { class: "part json" }, json(part.data));
    case "image":
      return imageView(part, frame);
    case "blob":
      return h(
        "div", { class: "part blob" },
        h("span", { class: "mono" }, `[blob ${part.blob_id.slice(0, 12)}… · ${part.media_type} · ${part.size} bytes]`),
        part.preview ? h("div", { class: "preview" }, part.preview) : null,
      );
    default:
      return h("pre", { class: "part json" }, json(part));
  }
}

/** An image part: the image itself, or a placeholder box when windows compress it. */
export function imageView(part, frame) {
  const caption = [
    part.image_id,
    part.width && part.height ? `${part.width}×${part.height}` : null,
    frame?.frame ? `frame: ${frame.frame}` : null,
  ].filter(Boolean).join(" · ");
  if (frame?.is_compressed) return placeholder(part.image_id, caption);
  const figure = h("figure", { class: "part image", dataset: { imageId: part.image_id } });
  figure.append(h("div", { class: "image-loading muted" }, "loading image…"), h("figcaption", null, caption));
  showImage(figure, part.image_id, caption);
  return figure;
}

/** ``[Visual_Placeholder: img_…]``: a box that restores the original when clicked. */
export function placeholder(imageId, caption = imageId) {
  const box = h(
    "button",
    { type: "button", class: "part placeholder", dataset: { imageId }, title: "Restore the original image" },
    h("span", { class: "mono" }, `[Visual_Placeholder: ${imageId}]`),
    h("span", { class: "muted small" }, `${caption} · click to restore`),
  );
  box.addEventListener("click", () => {
    const figure = h("figure", { class: "part image restored", dataset: { imageId } });
    figure.append(h("div", { class: "image-loading muted" }, "restoring…"), h("figcaption", null, caption));
    box.replaceWith(figure);
    showImage(figure, imageId, caption);
  });
  return box;
}

async function showImage(figure, imageId, caption) {
  try {
    const url = await imageUrl(imageId);
    const img = h("img", { src: url, alt: caption });
    figure.replaceChildren(img, h("figcaption", null, caption));
  } catch (error) {
    figure.replaceChildren(errorBox(error), h("figcaption", null, caption));
  }
}

/** Text with every ``[Visual_Placeholder: img_…]`` turned into a restorable box. */
export function textWithPlaceholders(text) {
  const pattern = /\[Visual_Placeholder: (img_[0-9a-zA-Z_]+)\]/g;
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) nodes.push(text.slice(last, match.index));
    nodes.push(placeholder(match[1]));
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(text.slice(last));
  return nodes;
}
