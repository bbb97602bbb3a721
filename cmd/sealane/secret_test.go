package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/secret"
	"github.com/sealane/sealane/pkg/secret/secrettest"
)

const (
	testKey  = "0123456789abcdef0123456789abcdef"
	otherKey = "fedcba9876543210fedcba9876543210fedcba9876543210"
)

// secretEnv isolates a test from the real key lookup: no key in the environment, an empty
// home and a fresh working directory, which it returns.
func secretEnv(t *testing.T) string {
	t.Helper()
	for _, env := range []string{secret.EnvKey, secret.EnvWerfKey, envOldKey, envWerfOldKey, "EDITOR"} {
		t.Setenv(env, "")
	}
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

// runSecret runs `sealane secret ARGS...` in process.
func runSecret(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"secret"}, args...))
	err = root.Execute()
	return out.String(), errOut.String(), err
}

func mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, _, err := runSecret(t, stdin, args...)
	if err != nil {
		t.Fatalf("sealane secret %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// fakeEditor writes a shell script to use as $EDITOR: it records the file it was given and
// that file's mode in dir, then runs body with $f set to the file.
func fakeEditor(t *testing.T, body string) (editor, dir string) {
	t.Helper()
	dir = t.TempDir()
	script := filepath.Join(dir, "editor.sh")
	content := "#!/bin/sh\nfor f; do :; done\n" +
		"echo \"$f\" > " + filepath.Join(dir, "path") + "\n" +
		"stat -c %a \"$f\" > " + filepath.Join(dir, "mode") + "\n" +
		body + "\n"
	if err := os.WriteFile(script, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	// An argument before the file checks that $EDITOR is split on spaces.
	return script + " --wait", dir
}

// checkEditorTemp checks that the editor got a 0600 file and that it is gone.
func checkEditorTemp(t *testing.T, dir string) {
	t.Helper()
	tmp := strings.TrimSpace(readFile(t, filepath.Join(dir, "path")))
	if mode := strings.TrimSpace(readFile(t, filepath.Join(dir, "mode"))); mode != "600" {
		t.Errorf("the editor's temporary file has mode %s, want 600", mode)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file %s still exists (%v)", tmp, err)
	}
	if _, err := os.Stat(filepath.Dir(tmp)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary directory %s still exists (%v)", filepath.Dir(tmp), err)
	}
}

// checkNoTemps fails if a temporary file of writeTemp is left in dir.
func checkNoTemps(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".sealane-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSecretGenerateKey(t *testing.T) {
	secretEnv(t)
	a := strings.TrimSpace(mustRun(t, "", "generate-key"))
	b := strings.TrimSpace(mustRun(t, "", "generate-secret-key"))
	for _, k := range []string{a, b} {
		if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(k) {
			t.Errorf("generate-key printed %q, want 32 hex characters", k)
		}
		secrettest.Key(t, k)
	}
	if a == b {
		t.Error("two generated keys are equal")
	}
}

const plainValues = `# database
db:
  user: shop
  password: "hunter2" # do not share
hosts:
  - a.example.com
  - b.example.com
token: |
  line one
  line two
nothing: null
`

func TestSecretRoundTrip(t *testing.T) {
	tests := []struct {
		kind, format string
		toFile       bool // input from a file and output with -o, else stdin and stdout
		in           string
		want         secret.Format
	}{
		{"values", "v2", false, plainValues, secret.FormatV2},
		{"values", "v2", true, plainValues, secret.FormatV2},
		{"values", "werf", false, plainValues, secret.FormatWerf},
		{"values", "werf", true, plainValues, secret.FormatWerf},
		{"values", "", true, "replicas: 3\nenabled: true\nratio: 0.5\n", secret.FormatV2}, // v2 keeps types
		{"file", "v2", false, "-----BEGIN KEY-----\nabc\n-----END KEY-----\n", secret.FormatV2},
		{"file", "v2", true, "\x00\x01binary\xff", secret.FormatV2},
		{"file", "werf", false, "user=admin\npassword=hunter2\n", secret.FormatWerf},
		{"file", "werf", true, "no trailing newline", secret.FormatWerf},
	}
	for _, tt := range tests {
		name := tt.kind + "/" + tt.format
		if tt.toFile {
			name += "/file"
		}
		t.Run(name, func(t *testing.T) {
			dir := secretEnv(t)
			t.Setenv(secret.EnvKey, testKey)
			enc := []string{tt.kind, "encrypt"}
			if tt.format != "" {
				enc = append(enc, "--format", tt.format)
			}
			var encrypted, decrypted string
			if tt.toFile {
				writeFile(t, filepath.Join(dir, "plain"), tt.in)
				if out := mustRun(t, "", append(enc, "plain", "-o", filepath.Join("new", "enc"))...); out != "" {
					t.Errorf("stdout = %q with -o", out)
				}
				encrypted = readFile(t, filepath.Join(dir, "new", "enc"))
				mustRun(t, "", tt.kind, "decrypt", filepath.Join("new", "enc"), "--output-file-path", "dec")
				decrypted = readFile(t, filepath.Join(dir, "dec"))
				if fi, err := os.Stat(filepath.Join(dir, "dec")); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("decrypted output file: %v, mode %v; want 0600", err, fi.Mode().Perm())
				}
			} else {
				encrypted = mustRun(t, tt.in, enc...)
				decrypted = mustRun(t, encrypted, tt.kind, "decrypt")
			}
			var got secret.Format
			if tt.kind == "values" {
				f, err := secret.ValuesFormat("enc", []byte(encrypted))
				if err != nil {
					t.Fatal(err)
				}
				got = f
				if strings.Contains(encrypted, "hunter2") || strings.Contains(tt.in, "# database") && !strings.Contains(encrypted, "# database") {
					t.Errorf("encrypted values file:\n%s", encrypted)
				}
			} else {
				got = secret.FormatOf([]byte(encrypted))
			}
			if got != tt.want {
				t.Errorf("encrypted in format %s, want %s:\n%s", got, tt.want, encrypted)
			}
			if decrypted != tt.in {
				t.Errorf("round trip:\n got %q\nwant %q", decrypted, tt.in)
			}
		})
	}
}

func TestSecretKeyLookup(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) []string // extra args
	}{
		{"flag", func(t *testing.T, _ string) []string { return []string{"--secret-key", testKey} }},
		{"SEALANE_SECRET_KEY", func(t *testing.T, _ string) []string { t.Setenv(secret.EnvKey, testKey); return nil }},
		{"WERF_SECRET_KEY", func(t *testing.T, _ string) []string { t.Setenv(secret.EnvWerfKey, testKey); return nil }},
		{".werf_secret_key", func(t *testing.T, dir string) []string {
			writeFile(t, filepath.Join(dir, ".werf_secret_key"), testKey+"\n")
			return nil
		}},
		{"global key", func(t *testing.T, _ string) []string {
			writeFile(t, filepath.Join(os.Getenv("HOME"), ".werf", "global_secret_key"), testKey)
			return nil
		}},
		{"flag wins", func(t *testing.T, _ string) []string {
			t.Setenv(secret.EnvKey, otherKey)
			return []string{"--secret-key", testKey}
		}},
	}
	enc, err := secret.EncryptValues("x", []byte("a: b\n"), secrettest.Key(t, testKey), secret.FormatV2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := secretEnv(t)
			args := append([]string{"values", "decrypt"}, tt.setup(t, dir)...)
			if out := mustRun(t, string(enc), args...); out != "a: b\n" {
				t.Errorf("decrypted %q", out)
			}
		})
	}
}

func TestSecretMissingKey(t *testing.T) {
	for _, args := range [][]string{
		{"values", "encrypt"},
		{"values", "decrypt"},
		{"file", "encrypt"},
		{"file", "decrypt"},
		{"values", "edit", "secret-values.yaml"},
		{"file", "edit", "secret/x"},
		{"rotate-key", "--old-key", testKey},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := secretEnv(t)
			editor, edDir := fakeEditor(t, `echo "a: b" > "$f"`)
			t.Setenv("EDITOR", editor)
			writeFile(t, filepath.Join(dir, "secret-values.yaml"), "a: "+strings.Repeat("0", 8)+"\n")
			out, _, err := runSecret(t, "a: b\n", args...)
			if !errors.Is(err, secret.ErrNoKey) {
				t.Fatalf("err = %v, want ErrNoKey", err)
			}
			for _, want := range []string{"$SEALANE_SECRET_KEY", "$WERF_SECRET_KEY", ".werf_secret_key", "global_secret_key", "sealane secret generate-key"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %s", err, want)
				}
			}
			if out != "" {
				t.Errorf("stdout = %q", out)
			}
			if _, err := os.Stat(filepath.Join(edDir, "path")); err == nil {
				t.Error("the editor ran without a key")
			}
			if _, err := os.Stat(filepath.Join(dir, "secret")); err == nil {
				t.Error("edit created a file without a key")
			}
		})
	}
}

func TestSecretWrongKey(t *testing.T) {
	good := secrettest.Key(t, testKey)
	valuesV2, _ := secret.EncryptValues("v", []byte("password: hunter2\n"), good, secret.FormatV2)
	valuesWerf, _ := secret.EncryptValues("v", []byte("password: hunter2\n"), good, secret.FormatWerf)
	fileV2, _ := secret.EncryptFile("f", []byte("hunter2"), good, secret.FormatV2)
	fileWerf := werfFileRejecting(t, []byte("hunter2\n"), good, secrettest.Key(t, otherKey))
	tests := []struct {
		kind, name string
		data       []byte
	}{
		{"values", "v2", valuesV2},
		{"values", "werf", valuesWerf},
		{"file", "v2", fileV2},
		{"file", "werf", fileWerf},
	}
	for _, tt := range tests {
		for _, edit := range []bool{false, true} {
			name := tt.kind + "/" + tt.name
			if edit {
				name += "/edit"
			}
			t.Run(name, func(t *testing.T) {
				dir := secretEnv(t)
				t.Setenv(secret.EnvKey, otherKey)
				editor, edDir := fakeEditor(t, `echo changed > "$f"`)
				t.Setenv("EDITOR", editor)
				path := filepath.Join(dir, "secret.enc")
				writeFile(t, path, string(tt.data))
				args := []string{tt.kind, "decrypt", path, "-o", "out"}
				if edit {
					args = []string{tt.kind, "edit", path}
				}
				out, stderr, err := runSecret(t, "", args...)
				if !errors.Is(err, secret.ErrKeyMismatch) {
					t.Fatalf("err = %v, want ErrKeyMismatch", err)
				}
				msg := err.Error()
				if !strings.Contains(msg, path) || !strings.Contains(msg, "does not match") {
					t.Errorf("error %q does not name the file or say the key does not match", msg)
				}
				for _, secretText := range []string{otherKey, testKey, "hunter2"} {
					if strings.Contains(msg+out+stderr, secretText) {
						t.Errorf("output or error shows %q: %s %s %s", secretText, msg, out, stderr)
					}
				}
				if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
					t.Error("decrypt wrote an output file with the wrong key")
				}
				if _, err := os.Stat(filepath.Join(edDir, "path")); err == nil {
					t.Error("the editor ran with the wrong key")
				}
				if got := readFile(t, path); got != string(tt.data) {
					t.Error("the file was changed")
				}
			})
		}
	}
}

func TestSecretInvalidKeyNotShown(t *testing.T) {
	secretEnv(t)
	bad := "0123456789abcdef0123456789abcdeZ"
	_, stderr, err := runSecret(t, "a: b\n", "values", "encrypt", "--secret-key", bad)
	if !errors.Is(err, secret.ErrInvalidKey) {
		t.Fatalf("err = %v, want ErrInvalidKey", err)
	}
	if strings.Contains(err.Error()+stderr, bad) {
		t.Errorf("the error shows the key: %v", err)
	}
}

func TestSecretValuesEdit(t *testing.T) {
	dir := secretEnv(t)
	t.Setenv(secret.EnvKey, testKey)
	key := secrettest.Key(t, testKey)
	for _, format := range []secret.Format{secret.FormatV2, secret.FormatWerf} {
		t.Run(string(format), func(t *testing.T) {
			path := filepath.Join(dir, string(format)+"-secret-values.yaml")
			before, err := secret.EncryptValues(path, []byte(plainValues), key, format)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, string(before))
			editor, edDir := fakeEditor(t, `sed -i 's/hunter2/swordfish/' "$f"`)
			t.Setenv("EDITOR", editor)
			_, stderr, err := runSecret(t, "", "values", "edit", path)
			if err != nil {
				t.Fatal(err)
			}
			checkEditorTemp(t, edDir)
			checkNoTemps(t, dir)
			if strings.Contains(stderr, "hunter2") || strings.Contains(stderr, "swordfish") {
				t.Errorf("stderr shows plaintext: %s", stderr)
			}
			after := readFile(t, path)
			beforeLines, afterLines := strings.Split(string(before), "\n"), strings.Split(after, "\n")
			if len(beforeLines) != len(afterLines) {
				t.Fatalf("line count changed:\n%s\n---\n%s", before, after)
			}
			var changed []string
			for i := range beforeLines {
				if beforeLines[i] != afterLines[i] {
					changed = append(changed, afterLines[i])
				}
			}
			if len(changed) != 1 || !strings.HasPrefix(strings.TrimSpace(changed[0]), "password:") {
				t.Errorf("changed lines = %q, want only the password line", changed)
			}
			if f, _ := secret.ValuesFormat(path, []byte(after)); f != format {
				t.Errorf("format after edit = %s, want %s", f, format)
			}
			plain, err := secret.DecryptValues(path, []byte(after), key)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.Replace(plainValues, "hunter2", "swordfish", 1); string(plain) != want {
				t.Errorf("decrypted after edit:\n%s\nwant:\n%s", plain, want)
			}
		})
	}
}

func TestSecretEditCreates(t *testing.T) {
	dir := secretEnv(t)
	t.Setenv(secret.EnvKey, testKey)
	key := secrettest.Key(t, testKey)

	editor, edDir := fakeEditor(t, `printf 'db:\n  password: s3cret\n' > "$f"`)
	t.Setenv("EDITOR", editor)
	path := filepath.Join(dir, ".helm", "secret-values.yaml")
	mustRun(t, "", "values", "edit", path)
	checkEditorTemp(t, edDir)
	data := readFile(t, path)
	if f, _ := secret.ValuesFormat(path, []byte(data)); f != secret.FormatV2 {
		t.Errorf("new values file format = %s, want v2", f)
	}
	if plain, err := secret.DecryptValues(path, []byte(data), key); err != nil || string(plain) != "db:\n  password: s3cret\n" {
		t.Errorf("decrypted %q, %v", plain, err)
	}

	editor, edDir = fakeEditor(t, `printf 'tls key' > "$f"`)
	t.Setenv("EDITOR", editor)
	path = filepath.Join(dir, ".helm", "secret", "tls.key")
	mustRun(t, "", "file", "edit", "--format", "werf", path)
	checkEditorTemp(t, edDir)
	data = readFile(t, path)
	if f := secret.FormatOf([]byte(data)); f != secret.FormatWerf {
		t.Errorf("new secret file format = %s, want werf", f)
	}
	if plain, err := secret.DecryptFile(path, []byte(data), key); err != nil || string(plain) != "tls key" {
		t.Errorf("decrypted %q, %v", plain, err)
	}
	checkNoTemps(t, dir)
}

func TestSecretFileEdit(t *testing.T) {
	dir := secretEnv(t)
	t.Setenv(secret.EnvKey, testKey)
	key := secrettest.Key(t, testKey)
	path := filepath.Join(dir, "secret", "app.conf")
	enc, _ := secret.EncryptFile(path, []byte("user=admin\npassword=old\n"), key, secret.FormatWerf)
	writeFile(t, path, string(enc))
	editor, edDir := fakeEditor(t, `sed -i 's/old/new/' "$f"`)
	t.Setenv("EDITOR", editor)
	mustRun(t, "", "file", "edit", path)
	checkEditorTemp(t, edDir)
	data := readFile(t, path)
	if f := secret.FormatOf([]byte(data)); f != secret.FormatWerf {
		t.Errorf("format after edit = %s, want werf (kept)", f)
	}
	if plain, err := secret.DecryptFile(path, []byte(data), key); err != nil || string(plain) != "user=admin\npassword=new\n" {
		t.Errorf("decrypted %q, %v", plain, err)
	}
}

func TestSecretEditLeavesFileUntouched(t *testing.T) {
	tests := []struct {
		name, kind, editor string
		wantErr            string
	}{
		{"editor fails", "values", `sed -i 's/hunter2/changed/' "$f"; exit 3`, "exit status 3"},
		{"editor fails on file", "file", `echo changed > "$f"; exit 1`, "exit status 1"},
		{"no changes", "values", `true`, ""},
		{"no changes to file", "file", `touch "$f"`, ""},
		{"invalid YAML", "values", `echo 'a: [' > "$f"`, "parse YAML"},
		{"editor not found", "values", "", "editor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := secretEnv(t)
			t.Setenv(secret.EnvKey, testKey)
			key := secrettest.Key(t, testKey)
			path := filepath.Join(dir, "secret-values.yaml")
			var enc []byte
			if tt.kind == "values" {
				enc, _ = secret.EncryptValues(path, []byte(plainValues), key, secret.FormatV2)
			} else {
				enc, _ = secret.EncryptFile(path, []byte("hunter2\n"), key, secret.FormatV2)
			}
			writeFile(t, path, string(enc))
			fi, _ := os.Stat(path)
			editor, edDir := fakeEditor(t, tt.editor)
			if tt.editor == "" {
				editor = filepath.Join(edDir, "no-such-editor")
			}
			t.Setenv("EDITOR", editor)
			_, stderr, err := runSecret(t, "", tt.kind, "edit", path)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantErr == "" && !strings.Contains(stderr, "no changes"):
				t.Errorf("stderr = %q, want a no changes note", stderr)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path+" left unchanged")):
				t.Errorf("err = %v, want one with %q and %q", err, tt.wantErr, path+" left unchanged")
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows plaintext: %v", err)
			}
			if got := readFile(t, path); got != string(enc) {
				t.Errorf("file changed:\n%s", got)
			}
			if fi2, _ := os.Stat(path); !fi2.ModTime().Equal(fi.ModTime()) {
				t.Error("file was rewritten")
			}
			if tt.editor != "" {
				checkEditorTemp(t, edDir)
			}
			checkNoTemps(t, dir)
		})
	}
}

// werfFileRejecting encrypts content as a werf-format secret file with key that wrong fails
// to decrypt. The werf format has no integrity check: a wrong key is noticed only through
// invalid padding, which a random IV passes about once in 256 tries, so the test picks an IV
// that fails rather than being flaky.
func werfFileRejecting(t *testing.T, content []byte, key, wrong secret.Key) []byte {
	t.Helper()
	for range 100 {
		enc, err := secret.EncryptFile("f", content, key, secret.FormatWerf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := secret.DecryptFile("f", enc, wrong); errors.Is(err, secret.ErrKeyMismatch) {
			return enc
		}
	}
	t.Fatal("no werf ciphertext fails with the wrong key in 100 tries")
	return nil
}

// rotateFixture is a werf project with a chart in .helm/ and an extra values file.
type rotateFixture struct {
	dir, values, fileV2, fileWerf, extra, empty string
	content                                     map[string]string
}

func newRotateFixture(t *testing.T, dir string, key secret.Key, broken string) *rotateFixture {
	t.Helper()
	f := &rotateFixture{
		dir:      dir,
		values:   filepath.Join(dir, ".helm", "secret-values.yaml"),
		fileV2:   filepath.Join(dir, ".helm", "secret", "tls.key"),
		fileWerf: filepath.Join(dir, ".helm", "secret", "sub", "db.conf"),
		empty:    filepath.Join(dir, ".helm", "secret", ".gitkeep"),
		extra:    filepath.Join(dir, "secret-values-production.yaml"),
		content:  map[string]string{},
	}
	writeFile(t, filepath.Join(dir, ".helm", "Chart.yaml"), "apiVersion: v2\nname: shop\nversion: 0.1.0\n")
	writeFile(t, filepath.Join(dir, ".helm", "values.yaml"), "plain: 1\n")
	enc := func(path string, do func(k secret.Key) ([]byte, error)) {
		k := key
		if path == broken {
			k = secrettest.Key(t, otherKey)
		}
		data, err := do(k)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, string(data))
		f.content[path] = string(data)
	}
	enc(f.values, func(k secret.Key) ([]byte, error) {
		return secret.EncryptValues(f.values, []byte(plainValues), k, secret.FormatV2)
	})
	enc(f.extra, func(k secret.Key) ([]byte, error) {
		return secret.EncryptValues(f.extra, []byte("db:\n  password: prod\n"), k, secret.FormatWerf)
	})
	enc(f.fileV2, func(k secret.Key) ([]byte, error) {
		return secret.EncryptFile(f.fileV2, []byte("tls\n"), k, secret.FormatV2)
	})
	enc(f.fileWerf, func(k secret.Key) ([]byte, error) {
		if f.fileWerf == broken {
			return werfFileRejecting(t, []byte("db\n"), k, key), nil
		}
		return secret.EncryptFile(f.fileWerf, []byte("db\n"), k, secret.FormatWerf)
	})
	writeFile(t, f.empty, "")
	f.content[f.empty] = ""
	if err := os.Chmod(f.values, 0o640); err != nil {
		t.Fatal(err)
	}
	return f
}

// check checks every file decrypts with key to its plaintext, in format (or its own format
// for "").
func (f *rotateFixture) check(t *testing.T, key secret.Key, format secret.Format, withExtra bool) {
	t.Helper()
	values := func(path, want string, own secret.Format) {
		data := readFile(t, path)
		plain, err := secret.DecryptValues(path, []byte(data), key)
		if err != nil || string(plain) != want {
			t.Errorf("%s: decrypted %q, %v", path, plain, err)
		}
		if got, _ := secret.ValuesFormat(path, []byte(data)); got != or(format, own) {
			t.Errorf("%s: format %s, want %s", path, got, or(format, own))
		}
	}
	file := func(path, want string, own secret.Format) {
		data := readFile(t, path)
		plain, err := secret.DecryptFile(path, []byte(data), key)
		if err != nil || string(plain) != want {
			t.Errorf("%s: decrypted %q, %v", path, plain, err)
		}
		if got := secret.FormatOf([]byte(data)); got != or(format, own) {
			t.Errorf("%s: format %s, want %s", path, got, or(format, own))
		}
	}
	values(f.values, plainValues, secret.FormatV2)
	file(f.fileV2, "tls\n", secret.FormatV2)
	file(f.fileWerf, "db\n", secret.FormatWerf)
	if withExtra {
		values(f.extra, "db:\n  password: prod\n", secret.FormatWerf)
	}
	if got := readFile(t, f.empty); got != "" {
		t.Errorf("empty file became %q", got)
	}
	if fi, err := os.Stat(f.values); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("%s: mode not kept: %v %v", f.values, fi.Mode(), err)
	}
	checkNoTemps(t, f.dir)
}

func or(a, b secret.Format) secret.Format {
	if a != "" {
		return a
	}
	return b
}

func TestSecretRotateKey(t *testing.T) {
	const newKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	tests := []struct {
		name      string
		env       map[string]string
		args      func(f *rotateFixture) []string
		format    secret.Format
		withExtra bool
	}{
		{
			name: "flags, dir and extra file",
			args: func(f *rotateFixture) []string {
				return []string{"--old-key", testKey, "--new-key", newKey, "--dir", f.dir, f.extra}
			},
			withExtra: true,
		},
		{
			name: "werf environment, current directory",
			env:  map[string]string{envWerfOldKey: testKey, secret.EnvWerfKey: newKey},
			args: func(*rotateFixture) []string { return nil },
		},
		{
			name: "to v2",
			env:  map[string]string{envOldKey: testKey},
			args: func(f *rotateFixture) []string {
				return []string{"--secret-key", newKey, "--format", "v2", "--dir", ".", f.extra}
			},
			format: secret.FormatV2, withExtra: true,
		},
		{
			name: "to werf, werf's command name",
			args: func(*rotateFixture) []string {
				return []string{"--old-key", testKey, "--new-key", newKey, "--format", "werf"}
			},
			format: secret.FormatWerf,
		},
		{
			name: "only the files given",
			args: func(f *rotateFixture) []string {
				return []string{"--old-key", testKey, "--new-key", newKey, f.extra}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := secretEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			f := newRotateFixture(t, dir, secrettest.Key(t, testKey), "")
			cmd := "rotate-key"
			if tt.format == secret.FormatWerf {
				cmd = "rotate-secret-key"
			}
			out, stderr, err := runSecret(t, "", append([]string{cmd}, tt.args(f)...)...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out+stderr, testKey) || strings.Contains(out+stderr, newKey) {
				t.Errorf("output shows a key:\n%s%s", out, stderr)
			}
			if tt.name == "only the files given" {
				if f.content[f.values] != readFile(t, f.values) {
					t.Error("the chart was rotated though only a file was given")
				}
				data := readFile(t, f.extra)
				if plain, err := secret.DecryptValues(f.extra, []byte(data), secrettest.Key(t, newKey)); err != nil || string(plain) != "db:\n  password: prod\n" {
					t.Errorf("extra file: %q, %v", plain, err)
				}
				return
			}
			f.check(t, secrettest.Key(t, newKey), tt.format, tt.withExtra)
			if !strings.Contains(out, f.values) && !strings.Contains(out, filepath.Join(".helm", "secret-values.yaml")) {
				t.Errorf("output does not list the values file:\n%s", out)
			}
		})
	}
}

func TestSecretRotateKeyAllOrNothing(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// broken is the fixture file encrypted with another key.
		broken func(f *rotateFixture) string
		want   []string
	}{
		{"secret file with another key", []string{"--old-key", testKey, "--new-key", otherKey}, func(f *rotateFixture) string { return f.fileWerf }, []string{"db.conf", "old key", "does not match"}},
		{"values with another key", []string{"--old-key", testKey, "--new-key", otherKey}, func(f *rotateFixture) string { return f.values }, []string{"secret-values.yaml", "old key", "does not match"}},
		{"wrong old key", []string{"--old-key", otherKey, "--new-key", testKey}, func(*rotateFixture) string { return "" }, []string{"secret-values.yaml", "tls.key", "does not match", "nothing was changed"}},
		{"no old key", []string{"--new-key", testKey}, func(*rotateFixture) string { return "" }, []string{"--old-key", envWerfOldKey}},
		{"no new key", []string{"--old-key", testKey}, func(*rotateFixture) string { return "" }, []string{"new key", "sealane secret generate-key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := secretEnv(t)
			// The fixture is built twice: once to learn the broken file's name.
			probe := newRotateFixture(t, t.TempDir(), secrettest.Key(t, testKey), "")
			broken := tt.broken(probe)
			if broken != "" {
				rel, _ := filepath.Rel(probe.dir, broken)
				broken = filepath.Join(dir, rel)
			}
			f := newRotateFixture(t, dir, secrettest.Key(t, testKey), broken)
			_, _, err := runSecret(t, "", append([]string{"rotate-key"}, tt.args...)...)
			if err == nil {
				t.Fatal("rotate-key succeeded")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			for _, k := range []string{testKey, otherKey} {
				if strings.Contains(err.Error(), k) {
					t.Errorf("error shows a key: %v", err)
				}
			}
			for path, want := range f.content {
				if got := readFile(t, path); got != want {
					t.Errorf("%s changed", path)
				}
			}
			checkNoTemps(t, dir)
		})
	}
}

func TestSecretRotateKeyNothingToRotate(t *testing.T) {
	dir := secretEnv(t)
	writeFile(t, filepath.Join(dir, "Chart.yaml"), "apiVersion: v2\nname: x\nversion: 0.1.0\n")
	_, _, err := runSecret(t, "", "rotate-key", "--old-key", testKey, "--new-key", otherKey)
	if err == nil || !strings.Contains(err.Error(), "nothing to rotate") {
		t.Errorf("err = %v, want nothing to rotate", err)
	}
}

func TestSecretInfo(t *testing.T) {
	dir := secretEnv(t)
	key := secrettest.Key(t, testKey)
	v2, _ := secret.EncryptValues("v", []byte("a: b\n"), key, secret.FormatV2)
	werf, _ := secret.EncryptFile("f", []byte("x"), key, secret.FormatWerf)
	writeFile(t, filepath.Join(dir, "v.yaml"), string(v2))
	writeFile(t, filepath.Join(dir, "f"), string(werf))
	writeFile(t, filepath.Join(dir, "p.yaml"), "a: b\n")
	out := mustRun(t, "", "info", "v.yaml", "f", "p.yaml")
	for _, want := range []string{
		"v.yaml: secret values file, sealane v2 format",
		"f: secret file, werf format (AES-CBC, not authenticated)",
		"p.yaml: secret values file, not encrypted",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("info output lacks %q:\n%s", want, out)
		}
	}
}

func TestSecretEncryptAlreadyEncrypted(t *testing.T) {
	secretEnv(t)
	t.Setenv(secret.EnvKey, testKey)
	enc := mustRun(t, "a: b\n", "values", "encrypt")
	if _, _, err := runSecret(t, enc, "values", "encrypt"); !errors.Is(err, secret.ErrAlreadyEncrypted) || !strings.Contains(err.Error(), "<stdin>") {
		t.Errorf("err = %v, want ErrAlreadyEncrypted naming <stdin>", err)
	}
	if _, _, err := runSecret(t, "a: b\n", "values", "encrypt", "--format", "v3"); err == nil || !strings.Contains(err.Error(), "--format") {
		t.Errorf("err = %v, want a --format error", err)
	}
}

// TestSecretRotateKeyProjectKeyFile checks the werf flow: the new key is already in the
// project's .werf_secret_key, the old one in $WERF_OLD_SECRET_KEY.
func TestSecretRotateKeyProjectKeyFile(t *testing.T) {
	dir := secretEnv(t)
	proj := filepath.Join(dir, "proj")
	f := newRotateFixture(t, proj, secrettest.Key(t, testKey), "")
	writeFile(t, filepath.Join(proj, ".werf_secret_key"), otherKey+"\n")
	t.Setenv(envWerfOldKey, testKey)
	if _, _, err := runSecret(t, "", "rotate-key", "--dir", "proj"); err != nil {
		t.Fatal(err)
	}
	f.check(t, secrettest.Key(t, otherKey), "", false)
}

// TestSecretFileEditWerfGCM checks that a file in werf's AES-GCM format, which sealane does
// not write, is saved in v2 with a note saying werf cannot read it any more.
func TestSecretFileEditWerfGCM(t *testing.T) {
	dir := secretEnv(t)
	t.Setenv(secret.EnvKey, testKey)
	raw, _ := hex.DecodeString(testKey)
	block, err := aes.NewCipher(raw)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, gcm.NonceSize())
	sealed := gcm.Seal(append([]byte{2, 0}, nonce...), nonce, []byte("old"), nil)
	path := filepath.Join(dir, "secret", "gcm")
	writeFile(t, path, hex.EncodeToString(sealed)+"\n")
	if f := secret.FormatOf([]byte(readFile(t, path))); f != secret.FormatWerfGCM {
		t.Fatalf("fixture format = %s", f)
	}
	editor, _ := fakeEditor(t, `echo new > "$f"`)
	t.Setenv("EDITOR", editor)
	_, stderr, err := runSecret(t, "", "file", "edit", path)
	if err != nil {
		t.Fatal(err)
	}
	data := readFile(t, path)
	if f := secret.FormatOf([]byte(data)); f != secret.FormatV2 {
		t.Errorf("format after edit = %s, want v2", f)
	}
	if plain, err := secret.DecryptFile(path, []byte(data), secrettest.Key(t, testKey)); err != nil || string(plain) != "new\n" {
		t.Errorf("decrypted %q, %v", plain, err)
	}
	if !strings.Contains(stderr, "werf cannot read") {
		t.Errorf("stderr lacks the werf-gcm note:\n%s", stderr)
	}
}
