package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestStorageFlags(t *testing.T) {
	parse := func(t *testing.T, writes bool, args ...string) (*storageFlags, error) {
		t.Helper()
		var f storageFlags
		fl := pflag.NewFlagSet("x", pflag.ContinueOnError)
		f.register(fl, writes)
		if err := fl.Parse(args); err != nil {
			t.Fatal(err)
		}
		_, err := f.value()
		return &f, err
	}
	t.Run("defaults", func(t *testing.T) {
		t.Setenv("HELM_DRIVER", "")
		t.Setenv("HELM_MAX_HISTORY", "")
		f, _ := parse(t, true)
		rs, err := f.value()
		if err != nil || rs.Driver != "secret" || rs.Namespace != "" || rs.HistoryMax == nil || *rs.HistoryMax != 10 {
			t.Errorf("value = %+v, %v; want secret, no namespace, 10", rs, err)
		}
		f, _ = parse(t, false)
		if rs, _ := f.value(); rs.HistoryMax != nil {
			t.Errorf("a read command sets HistoryMax %d", *rs.HistoryMax)
		}
	})
	t.Run("flags", func(t *testing.T) {
		t.Setenv("HELM_DRIVER", "secret")
		f, _ := parse(t, true, "--release-storage", "configmap", "--release-storage-namespace", "records", "--history-max", "0")
		rs, err := f.value()
		if err != nil || rs.Driver != "configmap" || rs.Namespace != "records" || *rs.HistoryMax != 0 {
			t.Errorf("value = %+v, %v", rs, err)
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("HELM_DRIVER", "configmaps")
		t.Setenv("HELM_MAX_HISTORY", "4")
		f, _ := parse(t, true)
		rs, err := f.value()
		if err != nil || rs.Driver != "configmap" || *rs.HistoryMax != 4 {
			t.Errorf("value = %+v, %v; want configmap from $HELM_DRIVER, 4 from $HELM_MAX_HISTORY", rs, err)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		t.Setenv("HELM_DRIVER", "sql")
		if _, err := parse(t, false); err == nil || !strings.Contains(err.Error(), "$HELM_DRIVER") {
			t.Errorf("HELM_DRIVER=sql: %v", err)
		}
		t.Setenv("HELM_DRIVER", "")
		if _, err := parse(t, false, "--release-storage", "memory"); err == nil || !strings.Contains(err.Error(), "--release-storage") {
			t.Errorf("--release-storage memory: %v", err)
		}
		if _, err := parse(t, true, "--history-max", "-1"); err == nil || !strings.Contains(err.Error(), "history limit -1") {
			t.Errorf("--history-max -1: %v", err)
		}
		if _, err := parse(t, false, "--release-storage-namespace", "Bad_NS"); err == nil || !strings.Contains(err.Error(), "Bad_NS") {
			t.Errorf("--release-storage-namespace Bad_NS: %v", err)
		}
	})
}
