package release

import (
	"context"
	"encoding/json"
	"fmt"
)

// Helm 4 writes two fields into a release record that Helm 3's release type, which sealane
// decodes into, lacks: apply_method (how Helm 4 applied the revision, "ssa" or "csa"; Helm 4
// upgrades the way the last revision was applied) and info.rollback_revision (the revision a
// rollback went back to; `helm history` shows it). A record sealane rewrites — a revision
// superseded, a pending one finished — keeps them, and a rollback sealane records names its
// revision the same way.

// keepFields returns enc (a record's JSON) with every field of keep (another record's JSON)
// that enc lacks, at the top level and in info. It returns enc unchanged when keep adds
// nothing.
func keepFields(enc, keep []byte) ([]byte, error) {
	if len(keep) == 0 {
		return enc, nil
	}
	var old, cur map[string]json.RawMessage
	if err := json.Unmarshal(keep, &old); err != nil {
		return nil, fmt.Errorf("read the stored record's fields: %w", err)
	}
	if err := json.Unmarshal(enc, &cur); err != nil {
		return nil, err
	}
	changed := false
	for k, v := range old {
		if _, ok := cur[k]; !ok {
			cur[k], changed = v, true
		}
	}
	if oldInfo, ok := old["info"]; ok && cur["info"] != nil {
		info, added, err := mergeMissing(cur["info"], oldInfo)
		if err != nil {
			return nil, err
		}
		cur["info"], changed = info, changed || added
	}
	if !changed {
		return enc, nil
	}
	return json.Marshal(cur)
}

// mergeMissing adds to object cur the fields of object old it lacks; added says whether any were.
func mergeMissing(cur, old json.RawMessage) (json.RawMessage, bool, error) {
	var o, c map[string]json.RawMessage
	if json.Unmarshal(old, &o) != nil || len(o) == 0 {
		return cur, false, nil // not an object: nothing to keep
	}
	if err := json.Unmarshal(cur, &c); err != nil {
		return nil, false, err
	}
	added := false
	for k, v := range o {
		if _, ok := c[k]; !ok {
			c[k], added = v, true
		}
	}
	if !added {
		return cur, false, nil
	}
	b, err := json.Marshal(c)
	return b, true, err
}

// rollbackFields are the fields a rollback to revision to adds to its record, as Helm 4 writes
// them (none for 0: no rollback).
func rollbackFields(to int) []byte {
	if to <= 0 {
		return nil
	}
	return fmt.Appendf(nil, `{"info":{"rollback_revision":%d}}`, to)
}

// RollbackRevision is the revision that revision of the release rolled back to, as Helm 4
// records it (info.rollback_revision); 0 for a revision that was no rollback or a record
// written without the field.
func (s *Store) RollbackRevision(ctx context.Context, name string, revision int) (int, error) {
	_, raw, err := s.getKept(ctx, name, revision)
	if err != nil {
		return 0, err
	}
	var rec struct {
		Info struct {
			RollbackRevision int `json:"rollback_revision"`
		} `json:"info"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return 0, fmt.Errorf("read release %s revision %d: %w", name, revision, err)
	}
	return rec.Info.RollbackRevision, nil
}
