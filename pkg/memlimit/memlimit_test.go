package memlimit

import (
	"errors"
	"os"
	"testing"
)

func TestChoose(t *testing.T) {
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, os.ErrNotExist
		}
	}
	for _, tt := range []struct {
		name    string
		given   string
		files   map[string]string
		want    Choice
		wantErr bool
	}{
		{"given", "300Mi", nil, Choice{Bytes: 300 << 20, From: "flag"}, false},
		{"given wins over the container", "1Gi", map[string]string{cgroupFiles[0]: "536870912\n"}, Choice{Bytes: 1 << 30, From: "flag"}, false},
		{"off", "off", map[string]string{cgroupFiles[0]: "536870912\n"}, Choice{From: "flag"}, false},
		{"cgroup v2 limit", "", map[string]string{cgroupFiles[0]: "536870912\n"}, Choice{Bytes: 483183820, From: "container"}, false},
		{"cgroup v2 without a limit", "", map[string]string{cgroupFiles[0]: "max\n"}, Choice{From: "none"}, false},
		{"cgroup v1 limit", "", map[string]string{cgroupFiles[1]: "268435456\n"}, Choice{Bytes: 241591910, From: "container"}, false},
		{"cgroup v1 without a limit", "", map[string]string{cgroupFiles[1]: "9223372036854771712\n"}, Choice{From: "none"}, false},
		{"no cgroup", "", nil, Choice{From: "none"}, false},
		{"not a size", "lots", nil, Choice{}, true},
		{"negative", "-5Mi", nil, Choice{}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Choose(tt.given, files(tt.files))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("%+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestChooseKeepsGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "200MiB")
	got, err := Choose("", func(string) ([]byte, error) { return nil, errors.New("not read") })
	if err != nil {
		t.Fatal(err)
	}
	// The runtime read GOMEMLIMIT at start (not set then): Choose reports what is in force.
	if got.From != "GOMEMLIMIT" {
		t.Errorf("%+v, want the limit $GOMEMLIMIT set", got)
	}
}
