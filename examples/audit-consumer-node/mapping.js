// The CloudEvents binary content mode over NATS headers, as sealane publishes it
// (docs/events.md, "Reading the events from another language"): a NATS message becomes a
// CloudEvent of the cloudevents SDK, validated by it.
import { CloudEvent } from "cloudevents";

const PREFIX = "ce-";
const STRUCTURED = "application/cloudevents+json";

// percentDecode undoes the escaping of a ce-* header value: %XX are the bytes of UTF-8.
export function percentDecode(value) {
  try {
    return decodeURIComponent(value);
  } catch {
    throw new Error(`bad percent-encoding in header value ${JSON.stringify(value.slice(0, 64))}`);
  }
}

// isJSON says whether a content type carries JSON (application/json, *+json), or is absent.
export function isJSON(contentType) {
  if (!contentType) {
    return true;
  }
  const media = contentType.split(";")[0].trim().toLowerCase();
  return media === "application/json" || media.endsWith("+json");
}

// headerEntries turns NATS headers (a MsgHdrs of nats.js, a Map, or a plain object) into
// [name, first value] pairs.
function headerEntries(headers) {
  if (!headers) {
    return [];
  }
  if (typeof headers.keys === "function" && typeof headers.get === "function" && !(headers instanceof Map)) {
    return headers.keys().map((k) => [k, headers.get(k)]);
  }
  const entries = headers instanceof Map ? [...headers.entries()] : Object.entries(headers);
  return entries.map(([k, v]) => [k, Array.isArray(v) ? v[0] : v]);
}

// toCloudEvent rebuilds the CloudEvent a NATS message carries. headers: the message's headers;
// body: its payload (Uint8Array). Header names are matched case-insensitively. A message whose
// Content-Type is application/cloudevents+json is read as structured mode.
export function toCloudEvent(headers, body) {
  const entries = headerEntries(headers);
  const contentType = entries.find(([k]) => k.toLowerCase() === "content-type")?.[1] ?? "";
  const text = body && body.length ? new TextDecoder().decode(body) : "";
  if (contentType.split(";")[0].trim().toLowerCase() === STRUCTURED) {
    return new CloudEvent(JSON.parse(text), true);
  }
  const attrs = {};
  for (const [name, value] of entries) {
    const lower = name.toLowerCase();
    if (!lower.startsWith(PREFIX) || value === undefined) {
      continue;
    }
    const attr = lower.slice(PREFIX.length);
    if (attr === "data" || attr === "data_base64") {
      continue; // not attributes: the data is the body
    }
    attrs[attr] = percentDecode(value);
  }
  if (!attrs.specversion) {
    throw new Error("no ce-specversion header and no application/cloudevents+json content type: not a CloudEvent");
  }
  if (!attrs.datacontenttype && contentType) {
    attrs.datacontenttype = contentType;
  }
  if (text !== "") {
    attrs.data = isJSON(attrs.datacontenttype) ? JSON.parse(text) : Buffer.from(body);
  }
  // strict: the SDK validates the attributes (required ones, types, extension names)
  const event = new CloudEvent(attrs, true);
  event.validate();
  return event;
}

// extension returns a CloudEvents extension attribute of event, "" when absent.
export function extension(event, name) {
  const v = event[name];
  return v === undefined || v === null ? "" : String(v);
}
