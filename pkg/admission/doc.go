// Package admission holds the renderer's decisions about a deploy request it receives from the
// bus, before anything is fetched, queued or rendered: which chart sources it may fetch
// (SourcePolicy), whether the request's payload targets the release its NATS subject names
// (CheckSubject), and who sent it (Verifier: the request's signature against the configured
// client keys). They are pure functions of their inputs — the time included — and say what
// is wrong, and what to do, in the words a failed deploy carries.
package admission
