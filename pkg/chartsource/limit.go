package chartsource

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// DefaultMaxBytes is the download budget of one Resolve when Options.MaxBytes is zero.
const DefaultMaxBytes = 512 << 20

// ErrTooLarge is wrapped by errors for a resolution that downloaded more than its budget
// (Options.MaxBytes): a repository index, a chart archive, an OCI manifest or layer, or the
// dependencies, all counted together.
var ErrTooLarge = errors.New("chart download over the size limit")

// ErrNotAllowed is wrapped by errors for a source or a dependency repository that
// Options.Allow refused.
var ErrNotAllowed = errors.New("chart source not allowed")

// budget counts the bytes one session reads from the network, over every response body its
// HTTP client reads (Helm's downloader and registry client included), and fails the read that
// goes over the limit.
type budget struct {
	mu    sync.Mutex
	limit int64
	used  int64
}

func newBudget(limit int64) *budget {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	return &budget{limit: limit}
}

// take counts n more bytes; it fails once the total is over the limit.
func (b *budget) take(n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used += n
	if b.used > b.limit {
		return b.err()
	}
	return nil
}

// err is the error of a download over the limit: it names the limit.
func (b *budget) err() error {
	return fmt.Errorf("downloads exceed the limit of %d bytes (%s): %w", b.limit, humanBytes(b.limit), ErrTooLarge)
}

// check refuses a response whose announced length alone is over what is left.
func (b *budget) check(resp *http.Response) error {
	if resp.ContentLength <= 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+resp.ContentLength > b.limit {
		return b.err()
	}
	return nil
}

// limitedBody is a response body whose reads are counted against a budget.
type limitedBody struct {
	io.ReadCloser
	b *budget
}

func (l limitedBody) Read(p []byte) (int, error) {
	n, err := l.ReadCloser.Read(p)
	if n > 0 {
		if berr := l.b.take(int64(n)); berr != nil {
			return n, berr
		}
	}
	return n, err
}

// humanBytes writes n in the largest binary unit that divides it, e.g. "50 MiB".
func humanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for i < len(units)-1 && n >= 1024 && n%1024 == 0 {
		n /= 1024
		i++
	}
	return fmt.Sprintf("%d %s", n, units[i])
}

// allow asks Options.Allow about location (an http(s), oci:// or file:// URL the session is
// about to use as a source or a dependency repository).
func (s *session) allow(location string) error {
	if s.opts.Allow == nil {
		return nil
	}
	if err := s.opts.Allow(location); err != nil {
		return fmt.Errorf("%w: %w", ErrNotAllowed, err)
	}
	return nil
}
