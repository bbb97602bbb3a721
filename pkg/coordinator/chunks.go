package coordinator

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/nats-io/nats.go/jetstream"
)

// A record of a large fleet is stored in parts, so that no KV value grows with the fleet and a
// change rewrites only the parts it touched: its JSON is cut at content-defined boundaries (a
// gear rolling hash, so an edit moves no boundary far from it), each part stored gzip'd under
// its own key, and the record key holds a manifest naming the parts in order. A record whose
// gzip'd JSON is at most inlineMax stays one value, as before.
//
// A part's key is chunks.<rollout>.<sha256 of its JSON, 32 hex>-<nonce>: the nonce is new for
// each write attempt, and a writer reuses only the parts of the manifest it read. So a part is
// never shared between attempts: after a compare-and-set that won, the parts of the manifest
// it replaced that the new one dropped are deleted, and an attempt that lost deletes the parts
// it created; a reader that meets a deleted part reads the record again.

const (
	// inlineMax is the largest gzip'd record stored as one value; a record of more than
	// inlineJSONMax of JSON is not even tried (JSON records compress about 13 times).
	inlineMax     = 256 << 10
	inlineJSONMax = 4 << 20
	// chunkMin, chunkMax and chunkMask bound the parts: at least 16 KiB of JSON, at most
	// 256 KiB, cut where the rolling hash's low 16 bits are zero (about every 64 KiB).
	chunkMin  = 16 << 10
	chunkMax  = 256 << 10
	chunkMask = 1<<16 - 1
	// readAttempts bounds the reads of a record whose parts changed under the reader.
	readAttempts = 8
)

// manifestMagic starts a record key's value that is a manifest of parts.
var manifestMagic = []byte("sealane-rollout-parts/1\n")

// manifest is the record key's value of a record stored in parts.
type manifest struct {
	// Parts are the parts' key suffixes (after chunks.<rollout>.), in order.
	Parts []string `json:"parts"`
	// Size is the length of the record's JSON.
	Size int `json:"size"`
}

// errPartGone says a part of the manifest read was deleted meanwhile (the record changed).
var errPartGone = errors.New("a part of the record changed while it was read")

func partKey(id, suffix string) string { return "chunks." + id + "." + suffix }

// gear is the rolling hash's table: fixed, so every replica cuts a record alike.
var gear = func() (t [256]uint64) {
	x := uint64(0x9e3779b97f4a7c15)
	for i := range t {
		x += 0x9e3779b97f4a7c15 // splitmix64
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		t[i] = z ^ z>>31
	}
	return t
}()

// split cuts raw into parts at content-defined boundaries.
func split(raw []byte) [][]byte {
	var out [][]byte
	start, h := 0, uint64(0)
	for i, c := range raw {
		h = h<<1 + gear[c]
		n := i - start + 1
		if n >= chunkMin && (h&chunkMask == 0 || n >= chunkMax) {
			out = append(out, raw[start:i+1])
			start, h = i+1, 0
		}
	}
	if start < len(raw) {
		out = append(out, raw[start:])
	}
	return out
}

// parts caches parts' JSON by key (a key names its content: the digest is in it), up to
// partsCacheBytes: three records of 10,000 clusters. It once kept 512 parts whatever their
// size, up to 115 MB of a coordinator's heap at 10,000 clusters.
var parts = newPartCache(partsCacheBytes)

const partsCacheBytes = 32 << 20

// partCache is an LRU of parts' JSON bounded by their total size.
type partCache struct {
	mu    sync.Mutex
	max   int
	size  int
	cache *lru.Cache[string, []byte]
}

func newPartCache(maxBytes int) *partCache {
	c := &partCache{max: maxBytes}
	c.cache, _ = lru.NewWithEvict[string, []byte](1<<16, func(_ string, p []byte) { c.size -= len(p) })
	return c
}

// Get returns the JSON of the part under key, if kept.
func (c *partCache) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cache.Get(key)
}

// Add keeps a copy of p, the JSON of the part under key, dropping the least recently used
// parts past the bound.
func (c *partCache) Add(key string, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(p) > c.max || c.cache.Contains(key) {
		return
	}
	c.size += len(p)
	c.cache.Add(key, bytes.Clone(p)) // p's capacity may be twice its length (io.ReadAll)
	for c.size > c.max {
		c.cache.RemoveOldest()
	}
}

// Purge drops every part.
func (c *partCache) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cache.Purge()
}

// stored is what a record's write puts under its key, and the new parts to create first.
type stored struct {
	value   []byte
	newKeys []string // partKey of each part created for this write
	m       *manifest
}

// encodeStored encodes record JSON raw of rollout id: inline when small, else a manifest that
// reuses the parts of prev (the manifest read, nil for none) whose content is unchanged.
func encodeStored(id string, raw []byte, prev *manifest) (stored, map[string][]byte, error) {
	if len(raw) <= inlineJSONMax {
		gz, err := encodeRecord(raw)
		if err != nil || len(gz) <= inlineMax {
			return stored{value: gz}, nil, err
		}
	}
	reuse := map[string]string{} // digest → suffix
	if prev != nil {
		for _, s := range prev.Parts {
			reuse[s[:strings.IndexByte(s, '-')]] = s
		}
	}
	nonce := make([]byte, 4)
	if _, err := rand.Read(nonce); err != nil {
		return stored{}, nil, err
	}
	m := &manifest{Size: len(raw)}
	fresh := map[string][]byte{}
	var st stored
	for _, p := range split(raw) {
		sum := sha256.Sum256(p)
		digest := hex.EncodeToString(sum[:16])
		suffix, ok := reuse[digest]
		if !ok {
			suffix = digest + "-" + hex.EncodeToString(nonce)
			if _, dup := fresh[suffix]; !dup {
				gz, err := encodeRecord(p)
				if err != nil {
					return stored{}, nil, err
				}
				fresh[suffix] = gz
				st.newKeys = append(st.newKeys, partKey(id, suffix))
			}
		}
		m.Parts = append(m.Parts, suffix)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return stored{}, nil, err
	}
	st.value, st.m = append(append([]byte{}, manifestMagic...), body...), m
	return st, fresh, nil
}

// putParts creates the new parts of a write (keys from suffix).
func (s Store) putParts(ctx context.Context, id string, fresh map[string][]byte) error {
	for suffix, gz := range fresh {
		if _, err := s.KV.Create(ctx, partKey(id, suffix), gz); err != nil {
			return fmt.Errorf("store part %s of rollout %s: %w", suffix, id, err)
		}
	}
	return nil
}

// dropParts deletes parts (by key) no manifest names any more; a failure leaves them behind.
func (s Store) dropParts(ctx context.Context, keys []string) {
	for _, k := range keys {
		_ = s.KV.Delete(ctx, k, 0)
	}
}

// replaced lists the keys of prev's parts that next (nil: an inline record) does not name.
func replaced(id string, prev, next *manifest) []string {
	if prev == nil {
		return nil
	}
	keep := map[string]bool{}
	if next != nil {
		for _, s := range next.Parts {
			keep[s] = true
		}
	}
	var out []string
	for _, s := range prev.Parts {
		if !keep[s] {
			out = append(out, partKey(id, s))
		}
	}
	return out
}

// load returns the record JSON of a record key's value: the value itself, or its parts read
// (errPartGone when one was deleted meanwhile) and the manifest.
func (s Store) load(ctx context.Context, id string, value []byte) ([]byte, *manifest, error) {
	if !bytes.HasPrefix(value, manifestMagic) {
		raw, err := gunzipped(value)
		return raw, nil, err
	}
	var m manifest
	if err := json.Unmarshal(value[len(manifestMagic):], &m); err != nil {
		return nil, nil, fmt.Errorf("parts manifest: %w", err)
	}
	out := make([]byte, 0, m.Size)
	for _, suffix := range m.Parts {
		key := partKey(id, suffix)
		p, ok := parts.Get(key)
		if !ok {
			e, err := s.KV.Get(ctx, key)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				return nil, nil, fmt.Errorf("part %s: %w", suffix, errPartGone)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("part %s: %w", suffix, err)
			}
			if p, err = gunzipped(e.Value()); err != nil {
				return nil, nil, fmt.Errorf("part %s: %w", suffix, err)
			}
			if sum := sha256.Sum256(p); !strings.HasPrefix(suffix, hex.EncodeToString(sum[:16])+"-") {
				return nil, nil, fmt.Errorf("part %s: its content does not match its digest", suffix)
			}
			parts.Add(key, p)
		}
		out = append(out, p...)
	}
	if len(out) != m.Size {
		return nil, nil, fmt.Errorf("parts add up to %d bytes, the manifest says %d", len(out), m.Size)
	}
	return out, &m, nil
}
