package specfile

import (
	"strings"
	"testing"
)

func TestDecoderCollectsEveryProblem(t *testing.T) {
	d := NewDecoder()
	d.RefuseKey = func(field, key string) (string, bool) { return "never inline", key == "secret" }
	root := d.Document([]byte("name: a\nname: b\nextra: 1\nsecret: x\nlist: one\nmode: fast\n"), "empty")
	f := d.Fields(root, "", "name", "list", "mode")
	d.Strs(f["list"], "list")
	d.Enum(f["mode"], "mode", "slow", "safe")
	err := &Error{File: "f.yaml", Problems: d.Problems}
	want := []string{
		"f.yaml:2: name: given twice (first on line 1): keep one",
		"f.yaml:3: extra: unknown key: the keys here are name, list, mode",
		"f.yaml:4: secret: never inline",
		"f.yaml:5: list: is a string, want a list: [one]",
		`f.yaml:6: mode: "fast" is not one of slow, safe`,
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if !d.Covered("list") || d.Covered("name") {
		t.Errorf("Covered: the mistyped list explains its own problems, the name does not")
	}
	if d.LineOf("mode.deep[2]") != 6 {
		t.Errorf("LineOf a field under mode = %d, want mode's line 6", d.LineOf("mode.deep[2]"))
	}
}

func TestDocumentProblems(t *testing.T) {
	d := NewDecoder()
	if d.Document([]byte("a: [1,\n"), "empty") != nil || len(d.Problems) != 1 || !strings.HasPrefix(d.Problems[0].Message, "invalid YAML") {
		t.Errorf("broken YAML: %+v", d.Problems)
	}
	d = NewDecoder()
	if d.Document(nil, "the file is empty") != nil || (&Error{File: "x", Problems: d.Problems}).Error() != "x: the file is empty" {
		t.Errorf("empty file: %+v", d.Problems)
	}
}
