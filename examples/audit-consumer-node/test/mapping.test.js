import assert from "node:assert/strict";
import { test } from "node:test";

import { Auditor } from "../auditor.js";
import { extension, toCloudEvent } from "../mapping.js";

const enc = (o) => new TextEncoder().encode(JSON.stringify(o));
const target = { cluster: "prod", namespace: "shop ü", release: "web" };

function binary(type, id, data, extra = {}) {
  return [
    {
      "Ce-Specversion": "1.0", "ce-id": id, "ce-source": "/sealane/recorder", "ce-type": type,
      "ce-subject": "clusters/prod/namespaces/shop%20%C3%BC/releases/web", "ce-time": "2025-01-02T03:04:05.123456789Z",
      "ce-correlationid": "d1", "ce-datacontenttype": "application/json", "Content-Type": "application/json",
      "Nats-Msg-Id": id, ...extra,
    },
    enc(data),
  ];
}

test("binary mode: attributes and extensions from percent-encoded ce-* headers", () => {
  const e = toCloudEvent(...binary("dev.sealane.deploy.succeeded.v1", "d1.succeeded", { target, revision: 2 },
    { "ce-rolloutid": "ro-1", "ce-traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }));
  assert.equal(e.specversion, "1.0");
  assert.equal(e.subject, "clusters/prod/namespaces/shop ü/releases/web");
  assert.equal(extension(e, "correlationid"), "d1");
  assert.equal(extension(e, "rolloutid"), "ro-1");
  assert.equal(extension(e, "nats-msg-id"), "");
  assert.deepEqual(e.data, { target, revision: 2 });
});

test("structured mode is read too", () => {
  const e = toCloudEvent({ "Content-Type": "application/cloudevents+json" }, enc({
    specversion: "1.0", id: "x", source: "/s", type: "dev.sealane.deploy.succeeded.v1", correlationid: "d9", data: { revision: 1 },
  }));
  assert.equal(extension(e, "correlationid"), "d9");
  assert.deepEqual(e.data, { revision: 1 });
});

test("not a CloudEvent, or an invalid one, is refused", () => {
  assert.throws(() => toCloudEvent({ "Content-Type": "application/json" }, enc({})), /ce-specversion/);
  const [h, body] = binary("dev.sealane.deploy.succeeded.v1", "d1.x", {});
  delete h["ce-source"];
  assert.throws(() => toCloudEvent(h, body));
  assert.throws(() => toCloudEvent({ ...h, "ce-source": "/s", "ce-id": "%zz" }, body), /percent-encoding/);
});

test("one line per finished deploy, joined by correlation id", () => {
  const lines = [];
  const a = new Auditor((record, line) => lines.push([record, line]));
  a.handle(toCloudEvent(...binary("dev.sealane.deploy.requested.v1", "d1", { target, requestedBy: "alice", chart: { name: "web", version: "1.2.0" } })));
  a.handle(toCloudEvent(...binary("dev.sealane.release.recorded.v1", "d1.recorded", {
    target, revision: 2, status: "deployed", outcome: "succeeded", requestedBy: "ci", requestedByVerified: true,
  })));
  assert.equal(lines.length, 1);
  assert.equal(lines[0][1], "2025-01-02T03:04:05Z deploy d1 by ci (verified): chart web 1.2.0 → prod/shop ü/web revision 2: succeeded (deployed)");
  assert.equal(lines[0][0].revision, 2);
  assert.equal(a.requests.size, 0);
});
