package webhook

import (
	"hash"
	"regexp"
	"strconv"

	"github.com/sealane/sealane/pkg/specfile"
	"go.yaml.in/yaml/v3"
)

// decoder walks the YAML node tree of a configuration file (pkg/specfile), collecting problems
// with their lines rather than stopping at the first.
type decoder struct {
	*specfile.Decoder
	file   string
	getenv func(string) (string, bool)
	digest hash.Hash // of the file and every secret source read
}

var secretEntryRe = regexp.MustCompile(`\.secrets\[\d+\]$`)

func newDecoder(file string, getenv func(string) (string, bool), digest hash.Hash) *decoder {
	d := &decoder{Decoder: specfile.NewDecoder(), file: file, getenv: getenv, digest: digest}
	d.RefuseKey = func(field, key string) (string, bool) {
		if key == "value" && secretEntryRe.MatchString(field) {
			return "secrets are never written in the configuration: put the secret in a file (file:) or an environment variable (env:)", true
		}
		return "", false
	}
	return d
}

func (d *decoder) decodeFile(data []byte) *Config {
	root := d.Document(data, "the file is empty: add receivers")
	if root == nil {
		return nil
	}
	return d.config(root)
}

// positiveInt reads a positive integer; def when absent.
func (d *decoder) positiveInt(n *yaml.Node, field string, def int) int {
	if n == nil {
		return def
	}
	s := d.Str(n, field)
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		d.Addf(n, field, "%q is not a positive integer: give a number of at least 1 (default %d)", s, def)
		return def
	}
	return v
}
