package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/secret"
)

// Environment variables holding the old key for rotate-key, after --old-key.
const (
	envOldKey     = "SEALANE_OLD_SECRET_KEY"
	envWerfOldKey = "WERF_OLD_SECRET_KEY"
)

// secretValuesFile is a chart's own encrypted values file.
const secretValuesFile = "secret-values.yaml"

// secretFlags are the flags every `sealane secret` command shares.
type secretFlags struct {
	key string
}

// loadKey finds the secret key: --secret-key, then the places secret.LoadKey looks in, with
// .werf_secret_key in the current directory. The error says where it looked and how to make
// a key; it never holds the key.
func (sf *secretFlags) loadKey() (secret.Key, error) {
	return sf.loadKeyIn("")
}

// loadKeyIn is loadKey with .werf_secret_key looked for in workDir ("" is the current
// directory), as deploy looks for it in the project directory.
func (sf *secretFlags) loadKeyIn(workDir string) (secret.Key, error) {
	k, _, err := secret.LoadKey(sf.key, workDir)
	return k, err
}

func newSecretCmd() *cobra.Command {
	sf := &secretFlags{}
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Generate keys; encrypt, decrypt and edit secret values and secret files; rotate keys (werf-compatible)",
		Long: `Work with encrypted secret values files (secret-values.yaml, --secret-values) and secret
files (a chart's secret/ directory, read by werf_secret_file), compatible with
` + "`werf helm secret ...`" + `.

The key is taken from --secret-key, else $` + secret.EnvKey + `, $` + secret.EnvWerfKey + `,
./` + secret.KeyFileName + ` and ~/` + secret.GlobalKeyFile + `, in that order.
Make one with ` + "`sealane secret generate-key`" + `.

Two formats are written: v2 (AES-GCM, authenticated; the default) and werf (werf's
AES-CBC format, not authenticated; --format werf, for files werf must read). Both,
and werf's AES-GCM format, are read.`,
	}
	cmd.PersistentFlags().StringVar(&sf.key, "secret-key", "", "secret key, 32/48/64 hex characters (default: $"+secret.EnvKey+", $"+secret.EnvWerfKey+", ./"+secret.KeyFileName+", ~/"+secret.GlobalKeyFile+"); prefer those over this flag, which shows in the process list")
	cmd.AddCommand(
		newSecretGenerateKeyCmd(),
		newSecretKindCmd(sf, valuesKind),
		newSecretKindCmd(sf, fileKind),
		newSecretRotateKeyCmd(sf),
		newSecretInfoCmd(),
	)
	return cmd
}

func newSecretGenerateKeyCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "generate-key",
		Aliases: []string{"generate-secret-key"},
		Short:   "Print a new random secret key (AES-128, 32 hex characters)",
		Example: `  # Save it as the project's key (do not commit this file)
  sealane secret generate-key > .werf_secret_key

  # Or export it
  export SEALANE_SECRET_KEY=$(sealane secret generate-key)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := secret.GenerateKey()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), k)
			return err
		},
	}
}

// secretKind is what differs between secret values files and secret files.
type secretKind struct {
	name, noun string
	encrypt    func(name string, data []byte, key secret.Key, f secret.Format) ([]byte, error)
	decrypt    func(name string, data []byte, key secret.Key) ([]byte, error)
	// update encrypts the edited plaintext of the file whose old content is old.
	update func(name string, old, plain []byte, key secret.Key, f secret.Format) ([]byte, error)
	rotate func(name string, data []byte, oldKey, newKey secret.Key, f secret.Format) ([]byte, error)
	// format tells the format an existing file is written in.
	format func(name string, data []byte) (secret.Format, error)
}

var valuesKind = &secretKind{
	name:    "values",
	noun:    "secret values file",
	encrypt: secret.EncryptValues,
	decrypt: secret.DecryptValues,
	update:  secret.UpdateValues,
	rotate:  secret.RotateValues,
	format:  secret.ValuesFormat,
}

var fileKind = &secretKind{
	name:    "file",
	noun:    "secret file",
	encrypt: secret.EncryptFile,
	decrypt: secret.DecryptFile,
	update: func(name string, _, plain []byte, key secret.Key, f secret.Format) ([]byte, error) {
		return secret.EncryptFile(name, plain, key, f)
	},
	rotate: secret.RotateFile,
	format: func(_ string, data []byte) (secret.Format, error) { return secret.FormatOf(data), nil },
}

func newSecretKindCmd(sf *secretFlags, k *secretKind) *cobra.Command {
	cmd := &cobra.Command{
		Use:   k.name,
		Short: "Encrypt, decrypt or edit a " + k.noun,
	}
	if k == valuesKind {
		cmd.Long = `A secret values file is a YAML values file whose leaf values are encrypted one by one;
keys, order and comments stay readable.`
	} else {
		cmd.Long = `A secret file (under a chart's secret/ directory, read with werf_secret_file) is encrypted
as a whole into one line.`
	}
	cmd.AddCommand(newSecretCryptCmd(sf, k, true), newSecretCryptCmd(sf, k, false), newSecretEditCmd(sf, k))
	return cmd
}

// newSecretCryptCmd is `secret values|file encrypt|decrypt [FILE]`.
func newSecretCryptCmd(sf *secretFlags, k *secretKind, encrypt bool) *cobra.Command {
	var output, format string
	verb, example := "decrypt", ""
	if encrypt {
		verb = "encrypt"
	}
	switch {
	case k == valuesKind && encrypt:
		example = `  sealane secret values encrypt values-plain.yaml -o .helm/secret-values.yaml
  sealane secret values encrypt --format werf < plain.yaml > secret-values.yaml`
	case k == valuesKind:
		example = `  sealane secret values decrypt .helm/secret-values.yaml`
	case encrypt:
		example = `  sealane secret file encrypt tls.key -o .helm/secret/tls.key`
	default:
		example = `  sealane secret file decrypt .helm/secret/tls.key -o tls.key`
	}
	cmd := &cobra.Command{
		Use:     verb + " [FILE]",
		Short:   strings.ToUpper(verb[:1]) + verb[1:] + " a " + k.noun + " (FILE or stdin) to stdout or --output",
		Example: example,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := sf.loadKey()
			if err != nil {
				return err
			}
			name, in, err := readInput(cmd, args)
			if err != nil {
				return err
			}
			var out []byte
			perm := os.FileMode(0o600)
			if encrypt {
				f, err := secret.ParseFormat(format)
				if err != nil {
					return fmt.Errorf("--format: %w", err)
				}
				if out, err = k.encrypt(name, in, key, f); err != nil {
					return err
				}
				perm = 0o644
			} else if out, err = k.decrypt(name, in, key); err != nil {
				return err
			}
			if output == "" {
				_, err = cmd.OutOrStdout().Write(out)
				return err
			}
			if err := os.MkdirAll(filepath.Dir(output), 0o755); err != nil {
				return err
			}
			return writeFileAtomic(output, out, perm)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&output, "output", "o", "", "write to this file instead of stdout (replaced atomically; a new decrypted file is created with mode 0600)")
	fl.StringVar(&output, "output-file-path", "", "alias of --output (werf's name)")
	_ = fl.MarkHidden("output-file-path")
	if encrypt {
		fl.StringVar(&format, "format", string(secret.FormatV2), "v2 (AES-GCM, authenticated) or werf (werf's AES-CBC format, for files werf must read)")
	}
	return cmd
}

// readInput reads FILE, or stdin when there is no argument or it is "-".
func readInput(cmd *cobra.Command, args []string) (string, []byte, error) {
	if len(args) == 0 || args[0] == "-" {
		data, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return "", nil, fmt.Errorf("read stdin: %w", err)
		}
		return "<stdin>", data, nil
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return "", nil, err // *fs.PathError names the file
	}
	return args[0], data, nil
}

func newSecretEditCmd(sf *secretFlags, k *secretKind) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "edit FILE",
		Short: "Edit a " + k.noun + " in $EDITOR (creates FILE if it does not exist)",
		Long: `Decrypt FILE into a private temporary file, open it in $EDITOR (default vi; it may
carry arguments, split on spaces) and encrypt the result back into FILE. A FILE that does
not exist is created. If the editor fails or nothing changed, FILE is left as it was. The
temporary file is removed in every case.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSecretEdit(cmd, sf, k, args[0], format)
		},
	}
	if k == valuesKind {
		cmd.Long += `

Values whose plaintext did not change keep their ciphertext, so the diff of FILE shows
only the values that were edited.`
		cmd.Example = `  sealane secret values edit .helm/secret-values.yaml
  EDITOR="code --wait" sealane secret values edit secret-values-production.yaml`
	} else {
		cmd.Example = `  sealane secret file edit .helm/secret/tls.key
  EDITOR="code --wait" sealane secret file edit .helm/secret/db.conf`
	}
	cmd.Flags().StringVar(&format, "format", "", "format to write in: v2 or werf (default: the file's current format; v2 for a new file)")
	return cmd
}

func runSecretEdit(cmd *cobra.Command, sf *secretFlags, k *secretKind, path, formatFlag string) error {
	key, err := sf.loadKey()
	if err != nil {
		return err
	}
	old, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var plain []byte
	format, current := secret.FormatV2, secret.FormatPlain
	if exists {
		if plain, err = k.decrypt(path, old, key); err != nil {
			return err
		}
		if current, err = k.format(path, old); err != nil {
			return err
		}
		if current == secret.FormatWerf {
			format = secret.FormatWerf
		}
	}
	if formatFlag != "" {
		if format, err = secret.ParseFormat(formatFlag); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
	}
	var note string
	switch {
	case formatFlag != "":
	case current == secret.FormatWerfGCM:
		note = fmt.Sprintf("%s was in werf's AES-GCM format, which sealane reads but does not write; it is now in the v2 format, which werf cannot read (edit with --format werf to keep it readable by werf)", path)
	case current == secret.FormatMixed:
		note = fmt.Sprintf("%s had values in several formats; they are all in the v2 format now (use --format to choose)", path)
	}

	// The plaintext lives in a directory only we can read, under the file's own base name
	// so that the editor picks the right syntax.
	dir, err := os.MkdirTemp("", "sealane-secret-edit-")
	if err != nil {
		return fmt.Errorf("create temporary directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	tmp := filepath.Join(dir, filepath.Base(path))
	if err := writeNewFile(tmp, plain, 0o600); err != nil {
		return err
	}

	stderr := cmd.ErrOrStderr()
	for {
		if err := runEditor(cmd, tmp); err != nil {
			return fmt.Errorf("%w; %s left unchanged", err, path)
		}
		edited, err := os.ReadFile(tmp)
		if err != nil {
			return fmt.Errorf("read the edited file: %w; %s left unchanged", err, path)
		}
		if bytes.Equal(edited, plain) {
			_, _ = fmt.Fprintf(stderr, "%s: no changes\n", path)
			return nil
		}
		out, err := k.update(path, old, edited, key, format)
		if err == nil {
			if !exists {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					return err
				}
			}
			if err := writeFileAtomic(path, out, 0o644); err != nil {
				return err
			}
			_, _ = fmt.Fprintf(stderr, "%s: saved, %s\n", path, format.Description())
			if note != "" {
				_, _ = fmt.Fprintf(stderr, "note: %s\n", note)
			}
			return nil
		}
		// Let a person at a terminal fix a YAML mistake instead of losing the edit.
		if !isTerminal(cmd.InOrStdin()) || !askYesNo(cmd, fmt.Sprintf("%v\nEdit again? [Y/n] ", err)) {
			return fmt.Errorf("%w; %s left unchanged", err, path)
		}
	}
}

// runEditor opens file in $EDITOR (default vi); $EDITOR may hold arguments, split on spaces.
func runEditor(cmd *cobra.Command, file string) error {
	editor := strings.Fields(os.Getenv("EDITOR"))
	if len(editor) == 0 {
		editor = []string{"vi"}
	}
	c := exec.Command(editor[0], append(editor[1:], file)...)
	c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := c.Run(); err != nil {
		return fmt.Errorf("editor %q: %w", strings.Join(editor, " "), err)
	}
	return nil
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func askYesNo(cmd *cobra.Command, prompt string) bool {
	_, _ = fmt.Fprint(cmd.ErrOrStderr(), prompt)
	line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	if err != nil && line == "" {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "", "y", "yes":
		return true
	}
	return false
}

type rotateFlags struct {
	oldKey, newKey, dir, format string
}

func newSecretRotateKeyCmd(sf *secretFlags) *cobra.Command {
	f := &rotateFlags{}
	cmd := &cobra.Command{
		Use:     "rotate-key [FILE...]",
		Aliases: []string{"rotate-secret-key"},
		Short:   "Re-encrypt a chart's secrets (and other secret files) from an old key to a new one",
		Long: `Decrypt secrets with the old key and encrypt them with the new one, like
` + "`werf helm secret rotate-secret-key`" + `.

Without FILE arguments, the chart in --dir (default: the current directory; a werf
project's .helm/ is found) is rotated: its ` + secretValuesFile + ` and every file under its
secret/ directory. FILE arguments are rotated too (only they, unless --dir is given):
a file holding one encrypted value is a secret file, any other a secret values file.

The old key is --old-key, else $` + envOldKey + `, else $` + envWerfOldKey + `. The new key is
--new-key, else the usual key (--secret-key, $` + secret.EnvKey + `, $` + secret.EnvWerfKey + `,
` + secret.KeyFileName + ` in --dir or the current directory, ~/` + secret.GlobalKeyFile + `).

Every file is decrypted and re-encrypted in memory first; if any fails, nothing is written.
Then each file is replaced atomically (a temporary file renamed over it). Values keep their
format unless --format is given.`,
		Example: `  # werf style: old key in the environment, new key in .werf_secret_key
  WERF_OLD_SECRET_KEY=$(cat old.key) sealane secret rotate-key --dir . extra-secret-values.yaml

  # Explicit keys, converting werf-format secrets to v2
  sealane secret rotate-key --old-key "$OLD" --new-key "$NEW" --format v2 --dir ./chart`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRotateKey(cmd, sf, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.oldKey, "old-key", "", "key the secrets are encrypted with now (default $"+envOldKey+", $"+envWerfOldKey+")")
	fl.StringVar(&f.newKey, "new-key", "", "key to encrypt with (default: --secret-key and the usual key lookup)")
	fl.StringVar(&f.dir, "dir", "", "chart or werf project directory whose "+secretValuesFile+" and secret/ are rotated (default: the current directory when no FILE is given)")
	fl.StringVar(&f.format, "format", "", "write all values in this format: v2 or werf (default: each value keeps its format)")
	return cmd
}

// rotateTarget is one file rotate-key rewrites.
type rotateTarget struct {
	path string // as shown to the user
	real string // symlinks resolved: the file that is replaced
	kind *secretKind
	mode fs.FileMode
	old  []byte
	new  []byte
}

func runRotateKey(cmd *cobra.Command, sf *secretFlags, f *rotateFlags, args []string) error {
	oldKey, err := rotateOldKey(f.oldKey)
	if err != nil {
		return err
	}
	var newKey secret.Key
	if strings.TrimSpace(f.newKey) != "" {
		if newKey, err = secret.ParseKey(f.newKey); err != nil {
			return fmt.Errorf("--new-key: %w", err)
		}
	} else if newKey, err = sf.loadKeyIn(f.dir); err != nil {
		return fmt.Errorf("new key: %w", err)
	}
	var format secret.Format
	if f.format != "" {
		if format, err = secret.ParseFormat(f.format); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
	}

	targets, err := rotateTargets(f.dir, args)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range targets {
		if t.new, err = t.kind.rotate(t.path, t.old, oldKey, newKey, format); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("nothing was changed:\n%w", errors.Join(errs...))
	}
	changed, err := replaceAll(targets)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	for _, t := range changed {
		_, _ = fmt.Fprintf(out, "rotated %s %s\n", t.kind.noun, t.path)
	}
	_, _ = fmt.Fprintf(out, "%d file(s) re-encrypted from key %s to key %s\n", len(changed), oldKey.ID(), newKey.ID())
	return nil
}

func rotateOldKey(flag string) (secret.Key, error) {
	src, v := "--old-key", flag
	if strings.TrimSpace(v) == "" {
		src, v = "$"+envOldKey, os.Getenv(envOldKey)
	}
	if strings.TrimSpace(v) == "" {
		src, v = "$"+envWerfOldKey, os.Getenv(envWerfOldKey)
	}
	if strings.TrimSpace(v) == "" {
		return secret.Key{}, fmt.Errorf("no old secret key: give --old-key or set $%s or $%s", envOldKey, envWerfOldKey)
	}
	k, err := secret.ParseKey(v)
	if err != nil {
		return secret.Key{}, fmt.Errorf("old key from %s: %w", src, err)
	}
	return k, nil
}

// rotateTargets lists the files to rotate: the chart's secrets (when dir is given or there
// are no files) and the files given, each once, with their content.
func rotateTargets(dir string, files []string) ([]*rotateTarget, error) {
	var targets []*rotateTarget
	seen := map[string]bool{}
	add := func(path string, kind *secretKind) error {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return err
		}
		if real, err = filepath.Abs(real); err != nil {
			return err
		}
		if seen[real] {
			return nil
		}
		fi, err := os.Stat(real)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory: give a chart directory with --dir", path)
		}
		data, err := os.ReadFile(real)
		if err != nil {
			return err
		}
		if kind == nil {
			kind = valuesKind
			if secret.FormatOf(data) != secret.FormatPlain {
				kind = fileKind
			}
		}
		seen[real] = true
		targets = append(targets, &rotateTarget{path: path, real: real, kind: kind, mode: fi.Mode().Perm(), old: data})
		return nil
	}

	if dir != "" || len(files) == 0 {
		if dir == "" {
			dir = "."
		}
		if fi, err := os.Stat(dir); err != nil {
			return nil, err
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("--dir %s: not a directory", dir)
		}
		chartDir, err := chart.ResolveDir(dir)
		if err != nil {
			chartDir = dir // a directory with secrets but no Chart.yaml is fine too
		}
		found := false
		values := filepath.Join(chartDir, secretValuesFile)
		if _, err := os.Stat(values); err == nil {
			found = true
			if err := add(values, valuesKind); err != nil {
				return nil, err
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		secretDir := filepath.Join(chartDir, secret.SecretDir)
		if fi, err := os.Stat(secretDir); err == nil && fi.IsDir() {
			found = true
			err := filepath.WalkDir(secretDir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				if d.Type()&fs.ModeSymlink != 0 {
					if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
						return err // a symlink to a directory is not followed
					}
				} else if !d.Type().IsRegular() {
					return nil
				}
				return add(p, fileKind)
			})
			if err != nil {
				return nil, err
			}
		}
		if !found && len(files) == 0 {
			return nil, fmt.Errorf("%s: no %s and no %s/ directory: nothing to rotate", chartDir, secretValuesFile, secret.SecretDir)
		}
	}
	for _, f := range files {
		if err := add(f, nil); err != nil {
			return nil, err
		}
	}
	return targets, nil
}

// replaceAll writes the new content of every changed target: first all temporary files, then
// the renames. If a rename fails, the files already replaced get their old content back. It
// returns the targets it changed.
func replaceAll(targets []*rotateTarget) ([]*rotateTarget, error) {
	var changed []*rotateTarget
	for _, t := range targets {
		if !bytes.Equal(t.old, t.new) {
			changed = append(changed, t)
		}
	}
	temps := make([]string, len(changed))
	cleanup := func() {
		for _, tmp := range temps {
			if tmp != "" {
				_ = os.Remove(tmp)
			}
		}
	}
	for i, t := range changed {
		tmp, err := writeTemp(t.real, t.new, t.mode)
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("%s: %w; nothing was changed", t.path, err)
		}
		temps[i] = tmp
	}
	for i, t := range changed {
		if err := os.Rename(temps[i], t.real); err != nil {
			cleanup()
			var restoreErrs []error
			for _, done := range changed[:i] {
				if err := writeFileAtomic(done.real, done.old, done.mode); err != nil {
					restoreErrs = append(restoreErrs, fmt.Errorf("%s: %w", done.path, err))
				}
			}
			if len(restoreErrs) > 0 {
				return nil, fmt.Errorf("%s: %w; restoring the files already rotated failed too (they hold the new key): %w", t.path, err, errors.Join(restoreErrs...))
			}
			return nil, fmt.Errorf("%s: %w; nothing was changed", t.path, err)
		}
		temps[i] = ""
	}
	return changed, nil
}

// writeFileAtomic replaces path with data through a temporary file in the same directory.
// An existing file keeps its permissions; a new one gets perm.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
	}
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeTemp writes data into a new temporary file next to path and returns its name.
func writeTemp(path string, data []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".sealane-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}

// writeNewFile creates path, which must not exist, with data and perm.
func writeNewFile(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func newSecretInfoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "info FILE...",
		Short: "Tell whether each FILE is a secret values file or a secret file and which format it uses (no key needed)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			for _, path := range args {
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				kind := valuesKind
				if secret.FormatOf(data) != secret.FormatPlain {
					kind = fileKind
				}
				f, err := kind.format(path, data)
				if err != nil {
					// Neither one encrypted value nor YAML: some plain file.
					_, _ = fmt.Fprintf(out, "%s: %s\n", path, secret.FormatPlain.Description())
					continue
				}
				_, _ = fmt.Fprintf(out, "%s: %s, %s\n", path, kind.noun, f.Description())
			}
			return nil
		},
	}
}
