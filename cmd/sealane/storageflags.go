package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/release"
)

// storageFlags say where the release records are kept: the flags of every command that reads
// or writes them, so that all of them look in the same place.
type storageFlags struct {
	driver    string
	namespace string
	// historyMax is --history-max; only the commands that add revisions register it.
	historyMax     int
	withHistoryMax bool
}

// register adds --release-storage and --release-storage-namespace, and with writes also
// --history-max (default $HELM_MAX_HISTORY, else 10).
func (f *storageFlags) register(fl *pflag.FlagSet, writes bool) {
	fl.StringVar(&f.driver, "release-storage", "", "where release records are kept: secret or configmap, as Helm's HELM_DRIVER (default $HELM_DRIVER, else secret)")
	fl.StringVar(&f.namespace, "release-storage-namespace", "", "namespace the release records are kept in (default: the release namespace)")
	if writes {
		f.withHistoryMax = true
		def := release.DefaultMaxHistory
		if n, err := strconv.Atoi(os.Getenv("HELM_MAX_HISTORY")); err == nil && n >= 0 {
			def = n
		}
		fl.IntVar(&f.historyMax, "history-max", def, "how many revisions of the release are kept, older ones are deleted (0: unlimited; default $HELM_MAX_HISTORY, else 10)")
	}
}

// value is the release storage the flags (and $HELM_DRIVER) ask for, checked.
func (f *storageFlags) value() (events.ReleaseStorage, error) {
	name, flag := f.driver, "--release-storage"
	if name == "" {
		name, flag = os.Getenv("HELM_DRIVER"), "$HELM_DRIVER"
	}
	driver, err := release.ParseDriver(name)
	if err != nil {
		return events.ReleaseStorage{}, fmt.Errorf("%s: %w", flag, err)
	}
	rs := events.ReleaseStorage{Driver: driver, Namespace: f.namespace}
	if f.withHistoryMax {
		n := f.historyMax
		rs.HistoryMax = &n
	}
	if err := release.CheckStorage(rs); err != nil {
		return events.ReleaseStorage{}, fmt.Errorf("release storage flags: %w", err)
	}
	return rs, nil
}
